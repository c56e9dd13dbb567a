import t from 'tap'
import { kitReading, simulateKits, type SimulatedReading } from '../../../../scripts/kit-simulator.js'
import { bearer, signUp } from '@esp/test-helpers/api'
import { collect, connectMqtt, subscribeGranted, until } from '@esp/test-helpers/mqtt'
import { buildPlatform } from '@esp/test-helpers/platform'
import { makeDevice } from '@esp/db/testing'

const KITS = 4
const CYCLES = 5
const PER_CYCLE = 3

t.test('simulated kits publish as the firmware does; every reading appears through the HTTP API and to live subscribers', async (t) => {
  const harness = await buildPlatform(t, { mqtt: true })
  const { app, database } = harness
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const httpPort = typeof address === 'object' && address !== null ? address.port : 0
  const mqttUrl = `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`
  const owner = await signUp(app)
  const kits: { id: number, token: string }[] = []
  for (let k = 0; k < KITS; k++) {
    const token = (0x5e0000 + k).toString(16)
    const { id } = await makeDevice(database, { ownerId: owner.id, kitId: 26, token })
    kits.push({ id, token })
  }
  // A browser follows the live readings over WebSocket while the kits publish over TCP.
  const browser = await connectMqtt(t, `ws://127.0.0.1:${httpPort}/mqtt`, { clientId: 'map-viewer' })
  const live = collect(browser)
  t.equal(await subscribeGranted(browser, 'devices/+/readings'), 0)

  const start = Date.UTC(2026, 10, 1)
  const published: SimulatedReading[] = []
  await simulateKits({ url: mqttUrl, tokens: kits.map((k) => k.token), cycles: CYCLES, intervalMs: 50, perCycle: PER_CYCLE, qos: 0, start, onReading: (r) => { published.push(r) } })
  const total = KITS * CYCLES * PER_CYCLE
  t.equal(published.length, total)
  // QoS 0 is not acknowledged: the kit has gone before its readings are committed.
  const values = published.reduce((n, r) => n + r.sensors.length, 0)
  await until(async () => Number((await database.sql`select count(*)::int as n from readings`)[0]?.n) === values, 10_000, `${values} readings stored`)
  await live.waitFor(total, 10_000)
  t.same(new Set(live.messages.map((m) => m.topic)), new Set(kits.map((k) => `devices/${k.id}/readings`)), 'live readings of every kit')

  for (const [k, kit] of kits.entries()) {
    const device = (await app.inject({ url: `/v0/devices/${kit.id}`, headers: bearer(owner.token) })).json()
    t.equal(device.hardware.last_status_message.hw_ver, '2.3', 'the info message of the first cycle is stored')
    t.equal(device.state, 'has_published')
    const last = CYCLES * PER_CYCLE - 1
    t.equal(device.last_reading_at, new Date(start + last * 60_000).toISOString().replace('.000Z', 'Z'))
    // Every temperature reading, minute by minute, as the kit published it.
    const res = await app.inject({ url: `/v0/devices/${kit.id}/readings?sensor_id=55&rollup=1m&from=2026-11-01T00:00:00Z&to=2026-11-01T01:00:00Z` })
    t.equal(res.statusCode, 200)
    const expected = Array.from({ length: CYCLES * PER_CYCLE }, (_, n) => kitReading(kit.token, k, n, start + n * 60_000))
      .map((r) => [r.recordedAt, r.sensors.find((s) => s.id === 55)?.value]).reverse()
    t.same(res.json().readings, expected, `kit ${k}: each reading through the HTTP API`)
    // RSSI comes every third reading only, as the firmware sends it.
    const rssi = await app.inject({ url: `/v0/devices/${kit.id}/readings?sensor_id=220&rollup=1h&function=count&from=2026-11-01T00:00:00Z&to=2026-11-01T00:59:59Z` })
    t.equal(rssi.json().sample_size, Math.ceil(CYCLES * PER_CYCLE / 3))
  }
})
