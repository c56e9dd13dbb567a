import t from 'tap'
import { kitReading, rawPayload } from '../../scripts/kit-simulator.js'
import { BALCONY, FIRMWARE_SENSORS, PHYSICAL_RANGES, quantityOfSensor, seedOf, sensorValue } from '../../scripts/sensor-values.js'

/**
 * What `pnpm simulate` publishes (scripts/kit-simulator.ts): each sensor's value as a kit at the
 * place would read it, never its id, in the firmware's raw format (clients.md §1.3.1). Publishing
 * itself is services/ingest/test/broker/kit-simulator.test.ts's.
 */
const start = Date.UTC(2026, 10, 28, 0, 0)

t.test('a raw message holds each sensor\'s believable value, as the firmware prints it', async (t) => {
  for (let n = 0; n < 24 * 60; n += 7) {
    const reading = kitReading('3f9a1c', 0, n, start + n * 60_000)
    const payload = rawPayload(reading)
    const match = /^\{t:(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ),(.*)\}$/.exec(payload)
    if (match === null) { t.fail(`not the firmware's shape: ${payload}`); continue }
    t.equal(match[1], reading.recordedAt)
    for (const pair of (match[2] ?? '').split(',')) {
      const [id = '', text = ''] = pair.split(':')
      const sensor = Number(id)
      const decimals = FIRMWARE_SENSORS.get(sensor)?.decimals
      const { min, max } = PHYSICAL_RANGES[quantityOfSensor(sensor)]
      const value = Number(text)
      if (!(new RegExp(decimals === 0 ? '^-?\\d+$' : '^-?\\d+\\.\\d\\d$').test(text) && value >= min && value <= max)) {
        t.fail(`sensor ${id}: ${text} in ${payload}`)
      }
    }
  }
  // The walkthrough (docs/walkthrough.md) showed 55 ºC for sensor 55 when the simulator sent ids as values.
  const temperatures = Array.from({ length: 60 }, (_, n) => kitReading('3f9a1c', 0, n, start + n * 60_000).sensors.find((s) => s.id === 55)?.value ?? NaN)
  t.ok(temperatures.every((v) => v > -10 && v < 40), 'temperatures of a November night in Barcelona')
  t.ok(new Set(temperatures).size > 1, 'that move from one minute to the next')
})

t.test('the firmware\'s sensor sets and order, with values a test computes again', async (t) => {
  const ids = (n: number): number[] => kitReading('3f9a1c', 2, n, start).sensors.map((s) => s.id)
  t.same(ids(1), [10, 221, 14, 55, 56, 53, 58, 113, 112])
  t.same(ids(3), [10, 221, 220, 14, 55, 56, 53, 58, 113, 112], 'RSSI every 3rd reading')
  t.same(ids(5), [10, 221, 14, 55, 56, 53, 58, 113, 112, 89, 87, 88, 165, 166, 167, 168, 169, 170], 'PMS every 5th')
  const reading = kitReading('3f9a1c', 2, 15, start + 1234)
  const site = { ...BALCONY, seed: seedOf('3f9a1c/2') }
  t.same(reading.sensors, reading.sensors.map((s) => ({ id: s.id, value: sensorValue(s.id, start + 1000, site) })), 'the values of scripts/sensor-values.ts at the whole second recorded')
  t.equal(reading.recordedAt, '2026-11-28T00:00:01Z')
  t.not(JSON.stringify(kitReading('3f9a1d', 2, 15, start).sensors), JSON.stringify(reading.sensors), 'another kit has weather of its own')
  const sydney = kitReading('3f9a1c', 2, 15, Date.UTC(2026, 10, 28, 2), { latitude: -33.87, longitude: 151.21 })
  t.ok((sydney.sensors.find((s) => s.id === 14)?.value ?? 0) > 1000, 'midday in Sydney is light at 02:00 UTC')
  t.equal(kitReading('3f9a1c', 2, 15, Date.UTC(2026, 10, 28, 2)).sensors.find((s) => s.id === 14)?.value, 0, 'while Barcelona is dark')
})
