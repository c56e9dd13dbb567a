import t from 'tap'
import { KIT_SENSORS, makeExplorerWorld } from '../../scripts/demo-world.js'
import { PHYSICAL_RANGES, quantityOfSensor, sunHeight } from '../../scripts/sensor-values.js'
import { bearer, signUpAs } from '@esp/test-helpers/api'
import { buildPlatform } from '@esp/test-helpers/platform'

/**
 * The explorer's demo network (scripts/demo-world.ts, what `pnpm demo` makes) looks believable:
 * every device's latest values inside their measurement's physical range, and the kit's history
 * following its city's days. test/e2e/readme.test.ts checks the same after the real `pnpm demo`.
 */
const outside = (values: { id: number, value: number | null }[]): string[] => values.flatMap(({ id, value }) => {
  const { min, max } = PHYSICAL_RANGES[quantityOfSensor(id)]
  return value === null || (value >= min && value <= max) ? [] : [`${id}: ${value}`]
})

t.test('the demo network\'s latest values and the kit\'s days are believable', async (t) => {
  const harness = await buildPlatform(t)
  const { app } = harness
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  // An admin: the world's 50 requests and this test's reads stay clear of a citizen's rate limit.
  const owner = await signUpAs(harness, 'admin')
  const world = await makeExplorerWorld(base, owner, { days: 3 })
  t.equal(world.devices.length, 20)

  let published = 0
  for (const device of world.devices) {
    const answer = (await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(owner.token) })).json() as { data: { sensors: { id: number, value: number | null }[] } }
    const values = answer.data.sensors.filter((s) => s.value !== null)
    if (values.length > 0) {
      published++
      t.same(values.map((s) => s.id).sort((a, b) => a - b), KIT_SENSORS.map((s) => s.id).sort((a, b) => a - b), `${device.city}: a value for each of the kit's sensors`)
    }
    t.same(outside(answer.data.sensors), [], `${device.city}: every latest value is believable`)
  }
  t.equal(published, 16, 'all but the 4 that never published')

  const history = (await app.inject({ url: `/v0/devices/${world.showcase.id}/readings?sensor_ids=all&rollup=1h&from=${world.showcase.from}&to=${world.showcase.to}`, headers: bearer(owner.token) })).json() as { sensors: { sensor_id: number, readings: [string, number | null][] }[] }
  t.equal(history.sensors.length, KIT_SENSORS.length)
  for (const sensor of history.sensors) {
    t.ok(sensor.readings.length >= 72, `sensor ${sensor.sensor_id}: three days of hours`)
    t.same(outside(sensor.readings.map(([, value]) => ({ id: sensor.sensor_id, value }))), [], `sensor ${sensor.sensor_id}: every hour believable`)
  }
  // Barcelona's nights are dark, its days lit.
  const light = history.sensors.find((s) => s.sensor_id === 14)?.readings ?? []
  const barcelona = { latitude: 41.3874, longitude: 2.1686 }
  t.ok(light.every(([at, value]) => sunHeight(Date.parse(at), barcelona) > 0 || value === 0), 'no light while the sun is down')
  t.ok(light.some(([, value]) => (value ?? 0) > 1000), 'over 1000 lux by day')
})
