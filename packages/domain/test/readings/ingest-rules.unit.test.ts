import t from 'tap'
import { buildRows, checkBatch, noneSkipped, OLDEST_READING, parseBatch, type SensorMap, skippedView, timeBoundsText, timeProblem } from '@esp/domain'

const NOW = new Date('2026-11-28T00:00:00Z')
const LIMITS = { maxValues: 1000, maxFutureMs: 86_400_000, minTime: OLDEST_READING }
const SENSORS: SensorMap = new Map<number | string, { id: number, calibrate: ((x: number) => number) | null }>([
  [55, { id: 55, calibrate: null }],
  [56, { id: 56, calibrate: null }],
  ['temp', { id: 55, calibrate: null }],
  // A calibration that turns 0 into -0 (`-1 * x`) and another with no finite value at 0 (`1 / x`).
  [57, { id: 57, calibrate: (x: number) => -1 * x }],
  [58, { id: 58, calibrate: (x: number) => 1 / x }]
])

t.test('one rule for the time bounds: the constant, the message naming the bound, the reason', async (t) => {
  t.same(OLDEST_READING, new Date('1990-01-01T00:00:00Z'))
  t.equal(timeBoundsText(LIMITS), "from 1990-01-01T00:00:00Z to 86400 seconds (1 day) after the server's clock")
  const latest = NOW.getTime() + LIMITS.maxFutureMs
  t.same(timeProblem(new Date('1980-01-01T00:00:00Z'), LIMITS, latest), { reason: 'too_old', message: 'is before 1990-01-01T00:00:00Z, the oldest time accepted' })
  t.same(timeProblem(new Date('2026-11-29T00:00:01Z'), LIMITS, latest), { reason: 'in_future', message: "is too far in the future: at most 86400 seconds (1 day) after the server's clock is accepted" })
  t.equal(timeProblem(new Date('1990-01-01T00:00:00Z'), LIMITS, latest), null, 'the bound itself is accepted')
  t.equal(timeProblem(new Date('2026-11-29T00:00:00Z'), LIMITS, latest), null)
})

t.test('parseBatch gives the reason of its first problem, null when there is none', async (t) => {
  const entry = (recordedAt: unknown, sensors: unknown) => ({ recorded_at: recordedAt, sensors })
  t.equal(parseBatch([entry('2026-11-27T00:00:00Z', [{ id: 55, value: 1 }])], LIMITS, NOW).reason, null)
  t.equal(parseBatch([entry('1980-01-01T00:00:00Z', [{ id: 55, value: 1 }])], LIMITS, NOW).reason, 'too_old')
  t.equal(parseBatch([entry('2030-01-01T00:00:00Z', [{ id: 55, value: 1 }])], LIMITS, NOW).reason, 'in_future')
  t.equal(parseBatch([entry('yesterday', [{ id: 55, value: 1 }]), entry('1980-01-01T00:00:00Z', [{ id: 55, value: 1 }])], LIMITS, NOW).reason, 'invalid')
  t.equal(parseBatch([entry('2026-11-27T00:00:00Z', [{ id: 55, value: 'x' }])], LIMITS, NOW).reason, 'invalid')
  t.equal(parseBatch('x', LIMITS, NOW).reason, 'invalid')
  const old = parseBatch([entry('1980-01-01T00:00:00Z', [{ id: 55, value: 1 }])], LIMITS, NOW)
  t.same(old.problems, { 'data[0].recorded_at': ['is before 1990-01-01T00:00:00Z, the oldest time accepted'] })
})

t.test('buildRows: unknown sensors are skipped and reported, the rest becomes rows', async (t) => {
  const { values, problems } = parseBatch([
    { recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 55, value: 12.5 }, { id: '56', value: '112.5' }, { id: 99999, value: 1 }] },
    { recorded_at: '2026-11-27T00:13:00Z', sensors: [{ id: 'no-such-key', value: 2 }, { id: 'temp', value: 3 }, { id: '99999', value: 4 }] }
  ], LIMITS, NOW)
  const skipped = noneSkipped()
  const rows = buildRows(7, values, SENSORS, problems, skipped)
  t.same(problems, {})
  t.same(rows.map((r) => [r.sensorId, r.value]), [[55, 12.5], [56, 112.5], [55, 3]])
  t.same(skippedView(skipped), {
    count: 3,
    unknown_sensors: [99999, 'no-such-key'],
    items: [{ path: 'data[0].sensors[2]', sensor: 99999 }, { path: 'data[1].sensors[0]', sensor: 'no-such-key' }, { path: 'data[1].sensors[2]', sensor: 99999 }]
  })
})

t.test('buildRows: what it reports is bounded, the count is exact', async (t) => {
  const data = Array.from({ length: 300 }, (_, i) => ({ recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 100_000 + i, value: i }] }))
  const { values, problems } = parseBatch(data, LIMITS, NOW)
  const skipped = noneSkipped()
  t.same(buildRows(7, values, SENSORS, problems, skipped), [])
  t.equal(skipped.count, 300)
  t.equal(skipped.sensors.size, 100)
  t.equal(skipped.items.length, 100)
})

t.test('buildRows stores -0 as 0, value and raw value, whatever the calibration makes of it', async (t) => {
  const { values, problems } = parseBatch([{ recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 55, value: -0 }, { id: 56, value: '-0.0' }, { id: 57, value: 0 }, { id: 57, value: -0 }] }], LIMITS, NOW)
  t.ok(Object.is(values[1]?.raw, -0), 'the posted text is read as -0')
  const rows = buildRows(7, values, SENSORS, problems, noneSkipped())
  t.equal(rows.length, 4)
  for (const row of rows) {
    t.ok(Object.is(row.value, 0), `value of sensor ${row.sensorId} is +0`)
    t.ok(Object.is(row.rawValue, 0), `raw value of sensor ${row.sensorId} is +0`)
  }
})

t.test('checkBatch: any malformed item refuses the whole batch; unknown sensors alone never do', async (t) => {
  const ok = checkBatch(7, parseBatch([{ recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 55, value: 1 }, { id: 99999, value: 2 }] }], LIMITS, NOW), SENSORS)
  t.match(ok, { status: 'accepted', rows: [{ sensorId: 55 }] })
  t.equal(ok.status === 'accepted' ? ok.skipped.count : -1, 1)
  const allUnknown = checkBatch(7, parseBatch([{ recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 99999, value: 2 }] }], LIMITS, NOW), SENSORS)
  t.match(allUnknown, { status: 'accepted', rows: [] }, 'nothing to store is not an error: it is reported')
  const old = checkBatch(7, parseBatch([
    { recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 55, value: 1 }] },
    { recorded_at: '1980-01-01T00:00:00Z', sensors: [{ id: 55, value: 1 }] }
  ], LIMITS, NOW), SENSORS)
  t.same(old, { status: 'rejected', reason: 'too_old', problems: { 'data[1].recorded_at': ['is before 1990-01-01T00:00:00Z, the oldest time accepted'] } })
  const uncalibrated = checkBatch(7, parseBatch([{ recorded_at: '2026-11-27T00:12:00Z', sensors: [{ id: 55, value: 1 }, { id: 58, value: 0 }] }], LIMITS, NOW), SENSORS)
  t.same(uncalibrated, { status: 'rejected', reason: 'invalid', problems: { 'data[0].sensors[1].value': ['has no finite calibrated value'] } })
})
