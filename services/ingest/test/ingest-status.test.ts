import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { Database } from '@esp/db'
import { apiService } from '@esp/api'
import { ingestService } from '@esp/ingest'
import { systemClock } from '@esp/domain'
import { bearer, signUp, signUpAs, TEST_JWT_SECRET } from '@esp/test-helpers/api'
import { sample } from '@esp/test-helpers/metrics'
import { connectMqtt } from '@esp/test-helpers/mqtt'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'
import { tempDataDir } from '@esp/test-helpers/process'
import { buildTestServer } from '@esp/test-helpers/server'

/*
 * Issue 35, from the outside: what real firmware sends over real MQTT and HTTP. Known sensors are
 * stored and unknown ones skipped; a message that breaks a rule is refused whole; neither is ever
 * silent: the HTTP answer names it, MQTT counts it, and the device's owner sees it.
 */

let tokens = 0
async function kitDevice (database: Database, ownerId: number): Promise<{ id: number, token: string }> {
  const id = await makeDevice(database, ownerId, { mac: null })
  const token = (0x5c0000 + ++tokens).toString(16)
  await database.sql`update devices set device_token = ${token}, kit_id = 26 where id = ${id}`
  return { id, token }
}

const readings = async (database: Database, deviceId: number) =>
  (await database.sql<Array<{ sensor_id: number, value: number }>>`select sensor_id, value from readings where device_id = ${deviceId} order by recorded_at, sensor_id`).map((r) => [r.sensor_id, r.value])

/** The device as `token` sees it, once what the ingest noted is written. */
async function seen (app: FastifyInstance, id: number, token?: string): Promise<Record<string, unknown>> {
  await app.mqttIngest.drain()
  const res = await app.inject({ url: `/v0/devices/${id}`, headers: token === undefined ? {} : bearer(token) })
  t.equal(res.statusCode, 200, res.body)
  return res.json()
}

t.test('MQTT raw: one unknown sensor id no longer loses the message; the owner sees what was skipped', async (t) => {
  const harness = await buildPlatform(t, { mqtt: true })
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const device = await kitDevice(database, owner.id)
  const kit = await connectMqtt(t, `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`, { clientId: device.token })

  t.same((await seen(app, device.id, owner.token)).ingest, null, 'nothing left out yet')
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2026-11-28T00:12:00Z,55:12.5,56:112.5,99999:1}', { qos: 1 })
  t.same(await readings(database, device.id), [[55, 12.5], [56, 112.5]], 'the known sensors are stored')
  t.equal(app.mqttStats.skippedValues, 1)
  t.equal(app.mqttStats.rejected, 0)

  const owned = await seen(app, device.id, owner.token)
  t.match(owned.ingest, {
    since: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    last_problem_at: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    unknown_sensors: [99999],
    skipped_values: 1,
    rejected_messages: 0,
    last_rejection: null
  })
  t.match((await seen(app, device.id, admin.token)).ingest, { unknown_sensors: [99999] }, 'admins see it')
  t.equal((await seen(app, device.id)).ingest, '[FILTERED]', 'anonymous callers do not')
  t.equal((await seen(app, device.id, other.token)).ingest, '[FILTERED]', 'nor other users')

  // The JSON form (older firmware, integrations): the same rule.
  await kit.publishAsync(`device/sck/${device.token}/readings`, JSON.stringify({ data: [{ recorded_at: '2026-11-28T00:13:00Z', sensors: [{ id: 55, value: 13 }, { id: 'co2x', value: 400 }] }] }), { qos: 1 })
  t.same((await readings(database, device.id)).slice(2), [[55, 13]])
  t.match((await seen(app, device.id, owner.token)).ingest, { unknown_sensors: ['co2x', 99999], skipped_values: 2, rejected_messages: 0 }, 'the latest first')
})

t.test('MQTT: a message stamped 1980 is refused whole, counted by reason and shown to its owner; 2020 is stored', async (t) => {
  const { app, database } = await buildPlatform(t, { mqtt: true })
  const owner = await signUp(app)
  const device = await kitDevice(database, owner.id)
  const kit = await connectMqtt(t, `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`, { clientId: device.token })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2020-01-01T00:00:00Z,55:1}', { qos: 1 })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:1980-01-01T00:00:00Z,55:2,56:3}', { qos: 1 })
  t.same(await readings(database, device.id), [[55, 1]], 'nothing of the 1980 message is stored')
  t.equal(app.mqttStats.rejectedBy.too_old, 1)
  t.match((await seen(app, device.id, owner.token)).ingest, {
    rejected_messages: 1,
    unknown_sensors: [],
    last_rejection: { reason: 'too_old', problems: { 'data[0].recorded_at': ['is before 1990-01-01T00:00:00Z, the oldest time accepted'] } }
  })

  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2026-03-02T10:21:00Z,55:1e5}', { qos: 1 })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2999-03-02T10:21:00Z,55:1}', { qos: 1 })
  await kit.publishAsync(`device/sck/${device.token}/readings`, JSON.stringify({ data: [{ recorded_at: '2026-11-28T00:00:00Z', sensors: [{ id: 55, value: 1 }] }, { recorded_at: 'yesterday', sensors: [{ id: 55, value: 1 }] }] }), { qos: 1 })
  t.same(app.mqttStats.rejectedBy, { unreadable: 1, invalid: 1, too_old: 1, in_future: 1, too_many_values: 0 })
  t.same(await readings(database, device.id), [[55, 1]], 'a message with one bad entry stores none of its entries')
  const status = (await seen(app, device.id, owner.token)).ingest
  t.match(status, { rejected_messages: 4, last_rejection: { reason: 'invalid', problems: { 'data[1].recorded_at': [/not a valid time/] } } })
})

t.test('HTTP: skipped values are named in the answer; a time out of bounds is a 422 naming it; -0 is stored as 0', async (t) => {
  const { app, database } = await buildPlatform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const post = async (data: unknown) => await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })

  const res = await post([
    { recorded_at: '2026-11-28T00:12:00Z', sensors: [{ id: 55, value: 12.5 }, { id: 56, value: '-0.0' }, { id: 99999, value: 1 }] },
    { recorded_at: '2026-11-28T00:13:00Z', sensors: [{ id: 'no-such-key', value: 2 }, { id: '99999', value: 3 }] }
  ])
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), {
    id: 'ok',
    message: 'Stored 2 readings; skipped 3 values of unknown sensors (99999, no-such-key)',
    errors: null,
    url: null,
    stored: 2,
    duplicates: 0,
    skipped: {
      count: 3,
      unknown_sensors: [99999, 'no-such-key'],
      items: [{ path: 'data[0].sensors[2]', sensor: 99999 }, { path: 'data[1].sensors[0]', sensor: 'no-such-key' }, { path: 'data[1].sensors[1]', sensor: 99999 }]
    }
  })
  const rows = await database.sql`select sensor_id, value, raw_value from readings where device_id = ${device} order by sensor_id`
  t.same(rows.map((r) => [r.sensor_id, r.value, r.raw_value]), [[55, 12.5, 12.5], [56, 0, 0]])
  t.ok(Object.is(rows[1]?.value, 0) && Object.is(rows[1]?.raw_value, 0), 'a posted -0.0 is stored as 0, value and raw value')
  const [latest] = await database.sql`select value, raw_value from latest_readings where device_id = ${device} and sensor_id = 56`
  t.ok(Object.is(latest?.value, 0) && Object.is(latest?.raw_value, 0), 'and so is its latest value')
  t.equal((await seen(app, device, owner.token)).ingest, null, 'the answer said it: the device status is for what nobody was told')

  const old = await post([{ recorded_at: '2026-11-28T00:14:00Z', sensors: [{ id: 55, value: 1 }] }, { recorded_at: '1980-01-01T00:00:00Z', sensors: [{ id: 55, value: 1 }, { id: 99999, value: 1 }] }])
  t.equal(old.statusCode, 422)
  t.same(old.json().errors, { 'data[1].recorded_at': ['is before 1990-01-01T00:00:00Z, the oldest time accepted'] })
  t.equal(old.json().id, 'unprocessable_entity')
  const ahead = await post([{ recorded_at: new Date(Date.now() + 2 * 86_400_000).toISOString(), sensors: [{ id: 55, value: 1 }] }])
  t.match(ahead.json(), { errors: { 'data[0].recorded_at': ["is too far in the future: at most 86400 seconds (1 day) after the server's clock is accepted"] } })
  t.equal((await database.sql`select count(*)::int as n from readings where device_id = ${device}`)[0]?.n, 2, 'nothing of a refused batch is written')
  t.equal((await seen(app, device, owner.token)).ingest, null, 'nor is an answered 422')

  const document = (await app.inject({ url: '/docs/json' })).json()
  const operation = document.paths['/v0/devices/{device_id}/readings'].post
  t.match(operation.description, /1990-01-01T00:00:00Z to 86400 seconds \(1 day\) after the server's clock/, 'the bounds are in the OpenAPI description')
  const answer = operation.responses['200'].content['application/json'].schema
  t.match(answer.properties.skipped, { type: 'object', properties: { count: { type: 'integer' }, unknown_sensors: { type: 'array', maxItems: 100 }, items: { type: 'array', maxItems: 100 } } })
})

t.test('/add: keys no sensor has are skipped, old timestamps refused, and the owner sees both', async (t) => {
  const { app, database } = await buildPlatform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 3, mac: '02:00:00:00:35:01' })
  const add = async (data: string): Promise<void> => {
    const res = await app.inject({ method: 'PUT', url: '/add', headers: { 'x-smartcitizenmacaddr': '02:00:00:00:35:01', 'x-smartcitizendata': data } })
    t.match(res.body, /^UTC:/, 'the answer is always the clock')
    await app.legacyAddSettled()
  }
  // Older than the three years /add used to keep to, within the bound of every path.
  await add(JSON.stringify([{ temp: '2345', bogus: '1', timestamp: '2015-06-01 10:00:00' }]))
  t.same((await readings(database, device)).map(([sensor]) => sensor), [12])
  await add(JSON.stringify([{ temp: '2345', timestamp: '1980-06-01 10:00:00' }]))
  await add('[{')
  t.match((await seen(app, device, owner.token)).ingest, { unknown_sensors: ['bogus'], skipped_values: 1, rejected_messages: 2, last_rejection: { reason: 'unreadable' } })
  const document = (await app.inject({ url: '/docs/json' })).json()
  t.match(document.paths['/v0/add'].put.description, /1990-01-01T00:00:00Z to 86400 seconds/)
})

t.test('data_policy: is_private for everyone, the rest for the owner and admins only, wherever a device is shown', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const device = await makeDevice(database, owner.id, { name: 'policy' })
  await database.sql`update devices set precise_location = false where id = ${device}`
  const filtered = { is_private: false, enable_forwarding: '[FILTERED]', precise_location: '[FILTERED]', forwarding_destination: '[FILTERED]' }
  const real = { is_private: false, enable_forwarding: false, precise_location: false, forwarding_destination: null }
  for (const [who, token, policy] of [['anonymous', undefined, filtered], ['another user', other.token, filtered], ['the owner', owner.token, real], ['an admin', admin.token, real]] as const) {
    const headers = token === undefined ? {} : bearer(token)
    const one = (await app.inject({ url: `/v0/devices/${device}`, headers })).json()
    t.same(one.data_policy, policy, `${who}: GET /devices/:id`)
    const list = (await app.inject({ url: '/v0/devices?per_page=100', headers })).json() as Array<{ id: number, data_policy: unknown }>
    t.same(list.find((d) => d.id === device)?.data_policy, policy, `${who}: the list`)
    const user = (await app.inject({ url: `/v0/users/${owner.id}`, headers })).json() as { devices: Array<{ id: number, data_policy: unknown }> }
    t.same(user.devices.find((d) => d.id === device)?.data_policy, policy, `${who}: user.devices`)
  }
})

t.test('metrics: refused readings messages by reason and skipped values', async (t) => {
  const dataDir = tempDataDir(t)
  const { app, database } = await buildTestServer(t, async (app, database) => {
    await app.register(apiService, { database, dataDir, accessTokenTtlSeconds: 3600, passwordResetTtlSeconds: 3600, uploadMaxBytes: 1024, uploadSecret: 'upload-secret' })
    await app.register(ingestService, { database, maxValues: 1000, maxFutureSeconds: 86_400, mqtt: { host: '127.0.0.1', port: 0, explicit: true } })
  }, (database) => ({ auth: { database, jwtSecret: TEST_JWT_SECRET, clock: systemClock } }))
  const owner = await signUp(app)
  const device = await kitDevice(database, owner.id)
  const kit = await connectMqtt(t, `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`, { clientId: device.token })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:2026-11-28T00:12:00Z,55:12.5,56:112.5,99999:1,99998:2}', { qos: 1 })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, '{t:1980-01-01T00:00:00Z,55:2}', { qos: 1 })
  await kit.publishAsync(`device/sck/${device.token}/readings/raw`, 'garbage', { qos: 1 })
  const text = (await app.inject({ url: '/metrics' })).body
  t.equal(sample(text, 'esp_mqtt_values_skipped_total', { reason: 'unknown_sensor' }), 2)
  t.equal(sample(text, 'esp_mqtt_readings_messages_rejected_total', { reason: 'too_old' }), 1)
  t.equal(sample(text, 'esp_mqtt_readings_messages_rejected_total', { reason: 'unreadable' }), 1)
  t.equal(sample(text, 'esp_mqtt_readings_messages_rejected_total', { reason: 'in_future' }), 0)
  t.equal(sample(text, 'esp_mqtt_messages_not_stored_total', { reason: 'rejected' }), 2, 'the old total still counts every refusal')
  t.equal(sample(text, 'esp_mqtt_readings_stored_total'), 2)
})
