import type { Socket } from 'node:net'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { bearer, signUp, signUpAs } from '@esp/test-helpers/api'
import { collect, connectMqtt, subscribeGranted, until } from '@esp/test-helpers/mqtt'
import { buildPlatform } from '@esp/test-helpers/platform'
// clients.md §1.6: the firmware's own payloads, replayed byte for byte.
import { E1, E2, E3, E4, E5 } from '@esp/test-helpers/firmware-payloads'
import type { Database } from '@esp/db'
import { makeDevice } from '@esp/db/testing'

async function deviceWithToken (database: Database, ownerId: number, fields: { isPrivate?: boolean } = {}): Promise<{ id: number, token: string }> {
  const { id, token } = await makeDevice(database, { ownerId, kitId: 26, ...fields })
  return { id, token: token ?? '' }
}

async function platform (t: Parameters<typeof buildPlatform>[0]): Promise<{ app: FastifyInstance, database: Database, mqttUrl: string, wsUrl: string, harness: Awaited<ReturnType<typeof buildPlatform>> }> {
  const harness = await buildPlatform(t, { mqtt: true })
  const { app } = harness
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const httpPort = typeof address === 'object' && address !== null ? address.port : 0
  return { ...harness, harness, mqttUrl: `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`, wsUrl: `ws://127.0.0.1:${httpPort}/mqtt` }
}

const readingCount = async (database: Database, deviceId: number): Promise<number> =>
  Number((await database.sql`select count(*)::int as n from readings where device_id = ${deviceId}`)[0]?.n)

t.test('a firmware cycle: hello, info, raw readings and a backlog burst at QoS 0, as the kit sends them', async (t) => {
  const { app, database, mqttUrl } = await platform(t)
  const owner = await signUp(app)
  const other = await signUp(app)
  const device = await deviceWithToken(database, owner.id)
  // The firmware connects with its token as client id and nothing else (clients.md §1.1).
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token, clean: true, keepalive: 120 })
  kit.publish(`device/sck/${device.token}/hello`, E1(device.token))
  kit.publish(`device/sck/${device.token}/info`, E2)
  kit.publish(`device/sck/${device.token}/readings/raw`, E3)
  for (const payload of E4) kit.publish(`device/sck/${device.token}/readings/raw`, payload)
  kit.publish('device/inventory', '{"time":"2026-03-02T03:00:41Z","id":"A-B-C-D","mac":"5E:CF:7F:D1:75:78","errors":0,"tests":[{"0":1.5}]}')
  await until(async () => await readingCount(database, device.id) === 19 + 9 + 9 + 10, 5000, 'every reading of the cycle')

  const owned = (await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(owner.token) })).json()
  t.same(owned.hardware.last_status_message, JSON.parse(E2), 'info is stored verbatim')
  t.equal(owned.hardware.version, '2.3')
  t.equal(owned.state, 'has_published')
  t.equal(owned.last_reading_at, '2026-03-02T10:21:00Z', 'the backlog burst did not roll the last reading back')
  const temperature = owned.data.sensors.find((s: { id: number }) => s.id === 55)
  t.equal(temperature?.value, 23.41, 'the latest value is the newest reading, not the last one received')
  const seen = (await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(other.token) })).json()
  t.equal(seen.hardware.last_status_message, '[FILTERED]', 'others see no status message')
  const [row] = await database.sql`select last_seen_at is not null as seen, last_status_at is not null as status_at from devices where id = ${device.id}`
  t.same({ ...row }, { seen: true, status_at: true }, 'hello marks the device as seen; info keeps its time')
  const [inventory] = await database.sql`select report->>'id' as id, raw_payload from device_inventories`
  t.equal(inventory?.id, 'A-B-C-D', 'the inventory report is stored')
  const history = (await app.inject({ url: `/v0/devices/${device.id}/readings?sensor_id=55&rollup=1m&from=2026-03-01T22:00:00Z&to=2026-03-02T11:00:00Z` })).json()
  t.same(history.readings, [['2026-03-02T10:21:00Z', 23.41], ['2026-03-01T22:16:00Z', 17.85], ['2026-03-01T22:15:00Z', 17.88], ['2026-03-01T22:14:00Z', 17.92]])
})

t.test('QoS 1: the PUBACK comes after the commit; a resent message is stored once; JSON readings and a token as username', async (t) => {
  const { app, database, mqttUrl } = await platform(t)
  const owner = await signUp(app)
  const device = await deviceWithToken(database, owner.id)
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, E3, { qos: 1 })
  t.equal(await readingCount(database, device.id), 19, 'stored by the time the PUBACK arrives')
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, E3, { qos: 1, dup: true })
  t.equal(await readingCount(database, device.id), 19, 'a redelivered message is stored once')
  t.equal(app.mqttStats.duplicates, 19)

  const integration = await connectMqtt(t, mqttUrl, { clientId: 'integration-with-a-long-client-id', username: device.token, password: 'password' })
  await integration.publishAsync(`device/sck/${device.token}/readings`, E5, { qos: 1 })
  t.equal(await readingCount(database, device.id), 23, 'the JSON form with two entries, token as username, meaningless password')
})

t.test('a client publishes only under its own token and subscribes to no device topic', async (t) => {
  const { app, database, mqttUrl } = await platform(t)
  const owner = await signUp(app)
  const mine = await deviceWithToken(database, owner.id)
  const theirs = await deviceWithToken(database, owner.id)
  const kit = await connectMqtt(t, mqttUrl, { clientId: mine.token })
  const closed = new Promise<void>((resolve) => kit.once('close', () => resolve()))
  kit.publish(`device/sck/${theirs.token}/readings/raw`, E3, { qos: 1 })
  await closed
  t.equal(await readingCount(database, theirs.id), 0, 'nothing stored for the other device; the connection was closed')

  const snoop = await connectMqtt(t, mqttUrl, { clientId: 'snoop' })
  for (const topic of [`device/sck/${mine.token}/readings/raw`, 'device/sck/+/readings', '#', 'device/inventory']) {
    t.equal(await subscribeGranted(snoop, topic), 128, `subscribing to ${topic} is refused`)
  }
  const spoof = await connectMqtt(t, mqttUrl, { clientId: 'spoof' })
  const spoofClosed = new Promise<void>((resolve) => spoof.once('close', () => resolve()))
  spoof.publish(`devices/${mine.id}/readings`, '{"device_id":1,"data":[]}')
  await spoofClosed
  t.pass('publishing on a live topic is refused')
})

t.test('bad payloads and unknown tokens are acknowledged, counted and stored nowhere; the broker stays up', async (t) => {
  const { app, database, mqttUrl } = await platform(t)
  const owner = await signUp(app)
  const device = await deviceWithToken(database, owner.id)
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token })
  const bad = [
    '{t:2026-03-02T10:21:00Z,55:1e5}', '{t: 2026-03-02T10:21:00Z,55:1}', '{55:1}', 'garbage', '{t:2026-03-02T10:21:00Z,55:"1"}',
    '{t:2999-03-02T10:21:00Z,55:1}', '{t:2026-03-02T10:21:00Z,55:1-}', Buffer.from([0xff, 0xfe, 0x00]).toString('latin1'),
    `{t:2026-03-02T10:21:00Z,${'55:1,'.repeat(2000)}}`
  ]
  for (const payload of bad) await kit.publishAsync(`device/sck/${device.token}/readings/raw`, payload, { qos: 1 })
  // '[]' has no data array: like the reference, nothing is stored and nothing is said of it.
  for (const payload of ['{', '[]', '{"data":"x"}', '{"data":[{"recorded_at":"yesterday","sensors":[{"id":55,"value":1}]}]}']) {
    await kit.publishAsync(`device/sck/${device.token}/readings`, payload, { qos: 1 })
  }
  for (const payload of ['not json', '["an array"]', '{"bad":"\\u0000"}']) await kit.publishAsync(`device/sck/${device.token}/info`, payload, { qos: 1 })
  // 4 MB of nested arrays: refused by a scan of its bytes, never given to JSON.parse (over a
  // second of CPU for such a text). The bound is generous for a busy machine; the scan takes ms.
  const cpu = process.cpuUsage()
  await kit.publishAsync(`device/sck/${device.token}/readings`, '['.repeat(4_000_000), { qos: 1 })
  const used = process.cpuUsage(cpu)
  t.ok((used.user + used.system) / 1000 < 400, `a 4 MB nested payload cost ${((used.user + used.system) / 1000).toFixed(0)} ms of CPU, client and broker`)
  // A sensor the catalogue does not know is no reason to refuse a message: it is skipped (issue 35).
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2026-03-02T10:21:00Z,999999:1}', { qos: 1 })
  t.equal(app.mqttStats.skippedValues, 1)
  t.equal(await readingCount(database, device.id), 0)
  t.equal(app.mqttStats.rejected, bad.length + 3 + 3 + 1)
  const [status] = await database.sql`select last_status_message from devices where id = ${device.id}`
  t.equal(status?.last_status_message, null)

  const stranger = await connectMqtt(t, mqttUrl, { clientId: 'ffffff' })
  await stranger.publishAsync('device/sck/ffffff/readings/raw', E3, { qos: 1 })
  await stranger.publishAsync('device/sck/ffffff/hello', E1('ffffff'), { qos: 1 })
  t.equal(app.mqttStats.unknownDevice, 2, 'an unknown token is acknowledged (a hello may come before the device exists)')
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, E3, { qos: 1 })
  t.equal(await readingCount(database, device.id), 19, 'the same connection still stores good readings')
})

t.test('when the database fails there is no PUBACK, the connection closes, and the resent message is stored', async (t) => {
  const { app, database, mqttUrl } = await platform(t)
  const owner = await signUp(app)
  const device = await deviceWithToken(database, owner.id)
  await database.sql.unsafe(`
    create function esp_test_fail() returns trigger language plpgsql as $$ begin raise exception 'disk on fire'; end $$;
    create trigger esp_test_fail before insert on readings for each statement execute function esp_test_fail();`)
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token, reconnectPeriod: 100 })
  let closes = 0
  kit.on('close', () => { closes++ })
  let acked = false
  const publishing = kit.publishAsync(`device/sck/${device.token}/readings/raw`, E3, { qos: 1 }).then(() => { acked = true })
  await until(() => closes > 0, 5000, 'the connection to close')
  t.equal(acked, false, 'no PUBACK while nothing is stored')
  t.equal(await readingCount(database, device.id), 0)
  await database.sql.unsafe('drop trigger esp_test_fail on readings; drop function esp_test_fail();')
  await publishing
  t.equal(await readingCount(database, device.id), 19, 'the client sent it again after reconnecting and it was stored')
  t.ok(app.mqttStats.failed >= 1)
})

t.test('backpressure: while the database is stuck the broker stops reading a fast client instead of buffering its messages', async (t) => {
  const { app, database, mqttUrl } = await platform(t)
  const owner = await signUp(app)
  const device = await deviceWithToken(database, owner.id)
  // The broker's end of the kit's connection: how much of what the kit sends it has read.
  let connection: Socket | undefined
  app.broker.on('client', (client) => { if (client.id === device.token) connection = client.conn as Socket })
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token })
  const total = 5000
  const start = Date.UTC(2026, 2, 1)
  // A second connection holds the readings table, as a long migration or a stalled disk would.
  const blocker = await database.sql.reserve()
  await blocker`begin`
  await blocker`lock table readings in access exclusive mode`
  let peak = 0
  const watch = setInterval(() => { peak = Math.max(peak, app.mqttIngest.pending) }, 5)
  t.teardown(() => { clearInterval(watch) })
  for (let i = 0; i < total; i++) {
    kit.publish(`device/sck/${device.token}/readings/raw`, `{t:${new Date(start + i * 60_000).toISOString().replace('.000', '')},55:${i}}`, { qos: 0 })
  }
  // Until the broker has stopped reading the kit: messages wait for the database, and the bytes
  // it has read of the kit's connection stay the same over ten polls (200 ms) although the kit
  // wrote more. A broker that buffered would read on to the end meanwhile.
  const written = (kit.stream as Socket).bytesWritten
  let read = -1
  let still = 0
  await until(() => {
    const now = connection?.bytesRead ?? 0
    still = now === read ? still + 1 : 0
    read = now
    return app.mqttIngest.pending > 0 && still >= 10
  }, 30_000, 'the broker to stop reading the kit while its messages wait for the database')
  t.ok(app.mqttIngest.pending > 0, 'messages wait for the database')
  t.ok(read < written, `the broker stopped reading at ${read} of the ${written} bytes the kit wrote`)
  t.ok(peak < total / 2, `the broker took only what one socket read holds (${peak} of ${total}); the rest waits in the client and TCP`)
  await blocker`rollback`
  blocker.release()
  await until(async () => await readingCount(database, device.id) === total, 30_000, 'every message once the database is back')
  t.equal(app.mqttIngest.pending, 0)
})

t.test('live readings: public devices to anyone over TCP and WebSocket, private ones to their owner only', async (t) => {
  const { app, database, mqttUrl, wsUrl } = await platform(t)
  const owner = await signUp(app)
  const publicDevice = await deviceWithToken(database, owner.id)
  const privateDevice = await deviceWithToken(database, owner.id, { isPrivate: true })
  const anyone = await connectMqtt(t, wsUrl, { clientId: 'browser' })
  const anyoneSeen = collect(anyone)
  t.equal(await subscribeGranted(anyone, 'devices/+/readings'), 0)
  t.equal(await subscribeGranted(anyone, `devices/${privateDevice.id}/readings`), 128, 'a private device is refused to others')
  const ownerClient = await connectMqtt(t, mqttUrl, { clientId: 'owner-app', username: owner.username, password: owner.token })
  const ownerSeen = collect(ownerClient)
  t.equal(await subscribeGranted(ownerClient, `devices/${privateDevice.id}/readings`), 0)
  await subscribeGranted(ownerClient, `devices/${publicDevice.id}/readings`)

  const kit = await connectMqtt(t, mqttUrl, { clientId: publicDevice.token })
  await kit.publishAsync(`device/sck/${publicDevice.token}/readings/raw`, '{t:2026-03-02T10:21:00Z,55:23.41,56:48.72}', { qos: 1 })
  const secret = await connectMqtt(t, mqttUrl, { clientId: privateDevice.token })
  await secret.publishAsync(`device/sck/${privateDevice.token}/readings/raw`, '{t:2026-03-02T10:22:00Z,55:1}', { qos: 1 })
  // Readings posted over HTTP go out the same way.
  const posted = await app.inject({ method: 'POST', url: `/v0/devices/${publicDevice.id}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: '2026-03-02T10:23:00Z', sensors: [{ id: 55, value: 2 }] }] } })
  t.equal(posted.statusCode, 200)
  await ownerSeen.waitFor(3)
  await anyoneSeen.waitFor(2)
  // A last public reading marks the end: the broker writes to one connection in order, so had the
  // private reading gone to this client, it would have come before the marker.
  t.equal((await app.inject({ method: 'POST', url: `/v0/devices/${publicDevice.id}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: '2026-03-02T10:24:00Z', sensors: [{ id: 55, value: 3 }] }] } })).statusCode, 200)
  await anyoneSeen.waitFor(3)
  t.same(anyoneSeen.messages.map((m) => m.topic), [`devices/${publicDevice.id}/readings`, `devices/${publicDevice.id}/readings`, `devices/${publicDevice.id}/readings`], 'nothing of the private device')
  t.same(JSON.parse(anyoneSeen.messages[0]?.payload ?? ''), {
    device_id: publicDevice.id,
    data: [{ recorded_at: '2026-03-02T10:21:00Z', sensors: [{ id: 55, value: 23.41, raw_value: 23.41 }, { id: 56, value: 48.72, raw_value: 48.72 }] }]
  })
  t.ok(ownerSeen.messages.some((m) => m.topic === `devices/${privateDevice.id}/readings`), 'the owner sees the private device')
})

t.test('live readings reach whoever still listens as others subscribe, unsubscribe and leave', async (t) => {
  const { app, database, mqttUrl, wsUrl } = await platform(t)
  const owner = await signUp(app)
  const device = await deviceWithToken(database, owner.id)
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token })
  let minute = 0
  const publishReading = async (): Promise<void> => {
    await kit.publishAsync(`device/sck/${device.token}/readings/raw`, `{t:2026-03-02T10:${String(minute++).padStart(2, '0')}:00Z,55:1}`, { qos: 1 })
  }
  const leaving = await connectMqtt(t, wsUrl, { clientId: 'leaving' })
  const staying = await connectMqtt(t, mqttUrl, { clientId: 'staying' })
  const seen = collect(staying)
  await subscribeGranted(leaving, `devices/${device.id}/readings`)
  await subscribeGranted(leaving, 'devices/+/readings')
  t.equal(await subscribeGranted(staying, `devices/${device.id}/readings`), 0)
  await publishReading()
  await seen.waitFor(1)
  await leaving.unsubscribeAsync('devices/+/readings')
  await leaving.endAsync(true)
  await until(() => app.mqttStats.connections === 2, 5000, 'the leaving client to be gone')
  await publishReading()
  await seen.waitFor(2)
  await staying.unsubscribeAsync(`devices/${device.id}/readings`)
  await publishReading()
  const late = await connectMqtt(t, mqttUrl, { clientId: 'late' })
  const lateSeen = collect(late)
  t.equal(await subscribeGranted(late, 'devices/+/readings'), 0)
  await publishReading()
  await lateSeen.waitFor(1)
  t.same(lateSeen.messages.map((m) => JSON.parse(m.payload).data[0].recorded_at), ['2026-03-02T10:03:00Z'], 'a new subscriber gets what is stored after its SUBACK')
  // Subscribed again, the client gets the next reading: anything sent to it after it unsubscribed
  // would have come before that one, on the same connection.
  t.equal(await subscribeGranted(staying, `devices/${device.id}/readings`), 0)
  await publishReading()
  await seen.waitFor(3)
  t.same(seen.messages.map((m) => JSON.parse(m.payload).data[0].recorded_at), ['2026-03-02T10:00:00Z', '2026-03-02T10:01:00Z', '2026-03-02T10:04:00Z'], 'nothing after unsubscribing')
})

t.test('forwarding: readings of a forwarding device reach its owner authenticated with the forwarding credentials', async (t) => {
  const { database, mqttUrl, harness } = await platform(t)
  const researcher = await signUpAs(harness, 'researcher')
  const [credentials] = await database.sql<{ forwarding_username: string, forwarding_token: string }[]>`
    select forwarding_username, forwarding_token from users where id = ${researcher.id}`
  if (credentials === undefined) throw new Error('no forwarding credentials')
  const device = await deviceWithToken(database, researcher.id)
  await database.sql`update devices set enable_forwarding = true where id = ${device.id}`
  const topic = `/forward/${credentials.forwarding_token}/device/+/readings`

  const stranger = await connectMqtt(t, mqttUrl, { clientId: 'stranger', username: credentials.forwarding_username, password: 'wrong' })
  t.equal(await subscribeGranted(stranger, topic), 128, 'wrong credentials: refused')
  const anonymous = await connectMqtt(t, mqttUrl, { clientId: 'anonymous' })
  t.equal(await subscribeGranted(anonymous, topic), 128)
  t.equal(await subscribeGranted(anonymous, '/forward/#'), 128)

  const forwarder = await connectMqtt(t, mqttUrl, { clientId: 'forwarder', username: credentials.forwarding_username, password: credentials.forwarding_token })
  const seen = collect(forwarder)
  t.equal(await subscribeGranted(forwarder, topic), 0)
  const kit = await connectMqtt(t, mqttUrl, { clientId: device.token })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2026-03-02T10:21:00Z,55:23.41}', { qos: 1 })
  await seen.waitFor(1)
  t.equal(seen.messages[0]?.topic, `/forward/${credentials.forwarding_token}/device/${device.id}/readings`)
  t.same(JSON.parse(seen.messages[0]?.payload ?? '').data[0].sensors, [{ id: 55, value: 23.41, raw_value: 23.41 }])
})
