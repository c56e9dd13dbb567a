import t from 'tap'
import fc from 'fast-check'
import { aggregateByBucket } from '../../src/timeseries/states.js'
import { compareReadings, type ReadingRow } from '../../src/timeseries/engine.js'

const HOUR = 3_600_000
const T0 = Date.UTC(2026, 0, 1)

const rowsArb = fc.array(fc.record({
  deviceId: fc.integer({ min: 1, max: 3 }),
  sensorId: fc.integer({ min: 1, max: 3 }),
  minute: fc.integer({ min: 0, max: 6 * 60 }),
  value: fc.double({ min: -1e6, max: 1e6, noNaN: true })
}), { maxLength: 300 }).map((items) => items.map((i): ReadingRow => ({ deviceId: i.deviceId, sensorId: i.sensorId, recordedAt: new Date(T0 + i.minute * 60_000), value: i.value, rawValue: i.value })))

t.test('property: one state per (device, sensor, bucket), in key order, whatever the order of the rows', async (t) => {
  fc.assert(fc.property(rowsArb, (rows) => {
    const states = aggregateByBucket(rows, HOUR)
    const groups = new Map<string, ReadingRow[]>()
    for (const row of rows) {
      const key = `${row.deviceId}:${row.sensorId}:${Math.floor(row.recordedAt.getTime() / HOUR) * HOUR}`
      groups.set(key, [...(groups.get(key) ?? []), row])
    }
    if (states.length !== groups.size) return false
    for (let i = 1; i < states.length; i++) {
      const a = states[i - 1]
      const b = states[i]
      if (a === undefined || b === undefined || (a.deviceId - b.deviceId || a.sensorId - b.sensorId || a.bucket - b.bucket) >= 0) return false
    }
    return states.every((state) => {
      const group = [...(groups.get(`${state.deviceId}:${state.sensorId}:${state.bucket}`) ?? [])].sort(compareReadings)
      const values = group.map((r) => r.value)
      const first = group[0]
      const last = group.at(-1)
      return first !== undefined && last !== undefined && state.count === group.length &&
        state.min === Math.min(...values) && state.max === Math.max(...values) &&
        state.firstAt === first.recordedAt.getTime() && state.lastAt === last.recordedAt.getTime() &&
        Math.abs(state.sum - values.reduce((s, v) => s + v, 0)) <= 1e-6 * Math.max(1, ...values.map(Math.abs))
    })
  }), { numRuns: 300 })
  t.pass('states match the groups')
})
