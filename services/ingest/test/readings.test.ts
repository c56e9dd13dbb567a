import t from 'tap'
import { bearer, signUp, signUpAs } from '@esp/test-helpers/api'
import { pgDate } from '@esp/db'
import { connectMqtt } from '@esp/test-helpers/mqtt'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

const post = (deviceId: number, token: string | undefined, body: unknown) => ({
  method: 'POST' as const, url: `/v0/devices/${deviceId}/readings`, headers: token === undefined ? {} : bearer(token), payload: body as object
})

t.test('posted readings are stored, acknowledged after commit, and show up as latest values', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { mac: 'aa:bb:cc:dd:ee:01' })
  const res = await app.inject(post(device, owner.token, {
    data: [
      { recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 55, value: 21.5 }, { id: 56, value: '48.2' }] },
      { recorded_at: '2026-11-01T10:01:00Z', sensors: [{ id: 55, value: 21.75 }] }
    ]
  }))
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { id: 'ok', message: 'Stored 3 readings', errors: null, url: null, stored: 3, duplicates: 0, skipped: { count: 0, unknown_sensors: [], items: [] } })
  const rows = await database.sql`select sensor_id, recorded_at, value, raw_value from readings where device_id = ${device} order by sensor_id, recorded_at`
  t.equal(rows.length, 3)
  const latest = await database.sql`select sensor_id, value, raw_value, prev_value from latest_readings where device_id = ${device} order by sensor_id`
  t.same(latest.map((r) => ({ ...r })), [
    { sensor_id: 55, value: 21.75, raw_value: 21.75, prev_value: 21.5 },
    { sensor_id: 56, value: 48.2, raw_value: 48.2, prev_value: null }
  ])
  const [state] = await database.sql`select state, last_reading_at from devices where id = ${device}`
  t.equal(state?.state, 'has_published')
  t.same(pgDate(state?.last_reading_at), new Date('2026-11-01T10:01:00Z'))
})

t.test('who may post: the owner or an admin', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const device = await makeDevice(database, owner.id)
  const body = { data: [{ recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 55, value: 1 }] }] }
  t.equal((await app.inject(post(device, undefined, body))).statusCode, 401)
  t.equal((await app.inject(post(device, other.token, body))).statusCode, 403)
  t.equal((await app.inject(post(999999, owner.token, body))).statusCode, 404)
  t.equal((await app.inject(post(device, admin.token, body))).statusCode, 200)
  t.equal((await app.inject(post(device, owner.token, body))).json().duplicates, 1)
  await database.sql`update devices set archived_at = now() where id = ${device}`
  t.equal((await app.inject(post(device, owner.token, body))).statusCode, 404, 'archived devices are gone')
})

t.test('a bad batch is refused whole, naming every bad item, and nothing is written', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const res = await app.inject(post(device, owner.token, {
    data: [
      { recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 55, value: 20 }] },
      { recorded_at: 'yesterday', sensors: [{ id: 55, value: 1 }] },
      { recorded_at: '2999-01-01T00:00:00Z', sensors: [{ id: 55, value: 1 }] },
      { recorded_at: '2026-11-01T10:02:00Z', sensors: [{ id: 999999, value: 1 }, { id: 55, value: 'NaN' }, { id: 56, value: null }, { id: 'no-such-key', value: 2 }] },
      { recorded_at: '2026-11-01T10:03:00Z', sensors: [] },
      'junk'
    ]
  }))
  t.equal(res.statusCode, 422)
  const errors = res.json().errors
  t.match(res.json(), { id: 'unprocessable_entity' })
  t.match(errors, {
    'data[1].recorded_at': [/not a valid time/],
    'data[2].recorded_at': ['is too far in the future: at most 86400 seconds (1 day) after the server\'s clock is accepted'],
    'data[3].sensors[1].value': [/finite number/],
    'data[3].sensors[2].value': [/blank/],
    'data[4].sensors': [/non-empty/],
    'data[5]': [/object/]
  })
  t.notOk('data[3].sensors[0].id' in errors || 'data[3].sensors[3].id' in errors, 'an unknown sensor is no problem: it is skipped when the batch is stored')
  const [counts] = await database.sql`select (select count(*) from readings where device_id = ${device})::int as readings,
    (select count(*) from latest_readings where device_id = ${device})::int as latest, (select state from devices where id = ${device}) as state`
  t.same({ ...counts }, { readings: 0, latest: 0, state: 'not_configured' })
  for (const body of [{}, { data: 'x' }, { data: [] }, { data: {} }]) {
    const bad = await app.inject(post(device, owner.token, body))
    t.ok([400, 422].includes(bad.statusCode), JSON.stringify(body))
    t.match(bad.json(), { id: String, message: String })
  }
})

t.test('limits: too many values and too large bodies are 413', async (t) => {
  const harness = await buildPlatform(t, { maxValues: 10, bodyLimit: 64 * 1024 })
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const many = { data: Array.from({ length: 11 }, (_, i) => ({ recorded_at: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(), sensors: [{ id: 55, value: i }] })) }
  const res = await app.inject(post(device, owner.token, many))
  t.equal(res.statusCode, 413)
  t.match(res.json(), { id: 'payload_too_large', message: /at most 10/ })
  const huge = await app.inject({ ...post(device, owner.token, {}), payload: JSON.stringify({ data: [{ recorded_at: '2026-01-01T00:00:00Z', sensors: [{ id: 55, value: 1 }], pad: 'x'.repeat(70_000) }] }), headers: { ...bearer(owner.token), 'content-type': 'application/json' } })
  t.equal(huge.statusCode, 413)
  const [count] = await database.sql`select count(*)::int as n from readings where device_id = ${device}`
  t.equal(count?.n, 0)
})

t.test('idempotent on (device, sensor, recorded_at): the first write wins, within and across batches', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const first = await app.inject(post(device, owner.token, { data: [{ recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 55, value: 1 }, { id: 55, value: 2 }] }] }))
  t.match(first.json(), { stored: 1, duplicates: 1 })
  const again = await app.inject(post(device, owner.token, { data: [{ recorded_at: '2026-11-01T10:00:00.000+00:00', sensors: [{ id: 55, value: 3 }] }] }))
  t.match(again.json(), { stored: 0, duplicates: 1 })
  const [row] = await database.sql`select value from readings where device_id = ${device}`
  t.equal(row?.value, 1)
  const [hourly] = await database.sql`select count::int as count, sum from readings_hourly where device_id = ${device}`
  t.same({ ...hourly }, { count: 1, sum: 1 }, 'tiers count each reading once')
})

t.test('backfilled history never overwrites the latest values', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  await app.inject(post(device, owner.token, { data: [{ recorded_at: '2026-11-01T12:00:00Z', sensors: [{ id: 55, value: 30 }] }, { recorded_at: '2026-11-01T11:00:00Z', sensors: [{ id: 55, value: 29 }] }] }))
  await app.inject(post(device, owner.token, { data: [{ recorded_at: '2025-01-01 00:00:00', sensors: [{ id: 55, value: -5 }] }] }))
  const [latest] = await database.sql`select value, prev_value, recorded_at from latest_readings where device_id = ${device}`
  t.same({ ...latest, recorded_at: pgDate(latest?.recorded_at) }, { value: 30, prev_value: 29, recorded_at: new Date('2026-11-01T12:00:00Z') })
  const [dev] = await database.sql`select last_reading_at from devices where id = ${device}`
  t.same(pgDate(dev?.last_reading_at), new Date('2026-11-01T12:00:00Z'))
  await app.inject(post(device, owner.token, { data: [{ recorded_at: '2026-11-01T13:00:00Z', sensors: [{ id: 55, value: 31 }] }] }))
  const [moved] = await database.sql`select value, prev_value from latest_readings where device_id = ${device}`
  t.same({ ...moved }, { value: 31, prev_value: 30 })
})

t.test('sensors by kit key or default key; value calibrated through the component equation, raw_value as posted', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 3 })
  await database.sql`insert into components (device_id, sensor_id, equation) values (${device}, 12, '(175.72 / 65536.0 * x) - 53')`
  const res = await app.inject(post(device, owner.token, { data: [{ recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 'temp', value: 26000 }, { id: 'noise', value: 55 }] }] }))
  t.equal(res.statusCode, 200, res.body)
  const rows = await database.sql`select sensor_id, value, raw_value from readings where device_id = ${device} order by sensor_id`
  t.same(rows.map((r) => ({ ...r })), [
    { sensor_id: 7, value: 55, raw_value: 55 },
    { sensor_id: 12, value: 175.72 / 65536 * 26000 - 53, raw_value: 26000 }
  ])
})

t.test('the older /add and /datetime', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 3, mac: 'bd:b1:de:13:67:31' })
  const clock = await app.inject({ url: '/datetime' })
  t.equal(clock.statusCode, 200)
  t.match(clock.body, /^UTC:\d{4},\d{1,2},\d{1,2},\d{2},\d{2},\d{2}#$/)
  const recent = new Date(Date.now() - 3600_000).toISOString().slice(0, 19).replace('T', ' ')
  const add = await app.inject({
    method: 'PUT',
    url: '/add',
    headers: { 'x-smartcitizenmacaddr': 'BD-B1-DE-13-67-31', 'x-smartcitizenversion': '1.1-0.8.5-A', 'x-smartcitizendata': JSON.stringify([{ temp: '2345', hum: '4000', light: '300', bogus: '1', timestamp: recent }]) }
  })
  t.equal(add.statusCode, 200, add.body)
  t.match(add.body, /^UTC:/)
  await app.legacyAddSettled()
  const rows = await database.sql`select sensor_id from readings where device_id = ${device} order by sensor_id`
  t.same(rows.map((r) => r.sensor_id), [12, 13, 14])
  // Whatever happens, the answer is the clock (behaviour.md §6.3).
  for (const headers of [
    { 'x-smartcitizenmacaddr': '00:00:00:00:00:00', 'x-smartcitizendata': '[]' },
    { 'x-smartcitizenmacaddr': 'bd:b1:de:13:67:31', 'x-smartcitizendata': '[{' },
    { 'x-smartcitizenmacaddr': 'not a mac', 'x-smartcitizendata': '{}' },
    { 'x-smartcitizendata': '[]' },
    {}
  ]) {
    const res = await app.inject({ method: 'PUT', url: '/v0/add', headers })
    t.same([res.statusCode, res.headers['content-type'], /^UTC:[\d,]+#$/.test(res.body)], [200, 'application/json; charset=utf-8', true], `the clock for ${JSON.stringify(headers)}`)
  }
})

t.test('/add stores only into devices that speak it, never into a private one by its MAC alone', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const [key] = await database.sql<{ legacy_api_key: string }[]>`select legacy_api_key from users where id = ${owner.id}`
  const legacyKey = key?.legacy_api_key ?? ''
  const kits = {
    publicLegacy: await makeDevice(database, owner.id, { kitId: 2, mac: '02:00:00:00:00:01' }),
    privateLegacy: await makeDevice(database, owner.id, { kitId: 3, mac: '02:00:00:00:00:02', isPrivate: true }),
    current: await makeDevice(database, owner.id, { kitId: 26, mac: '02:00:00:00:00:03' }),
    noKit: await makeDevice(database, owner.id, { kitId: null, mac: '02:00:00:00:00:04' })
  }
  let minute = 0
  const send = async (mac: string, apiKey?: string): Promise<string> => {
    minute += 1
    const at = new Date(Date.now() - 86_400_000 + minute * 60_000).toISOString().slice(0, 19).replace('T', ' ')
    const res = await app.inject({
      method: 'POST',
      url: '/add',
      headers: { 'x-smartcitizenmacaddr': mac, 'x-smartcitizendata': JSON.stringify([{ temp: '21.5', noise: '40', t: '21.5', timestamp: at }]), ...(apiKey === undefined ? {} : { 'x-smartcitizenapikey': apiKey }) }
    })
    t.equal(res.statusCode, 200)
    return res.body.replace(/^UTC:[\d,]+#$/, 'UTC:<clock>#')
  }
  const stored = async (id: number): Promise<number> => {
    await app.legacyAddSettled()
    return Number((await database.sql<{ n: number }[]>`select count(*)::int as n from readings where device_id = ${id}`)[0]?.n)
  }
  const answers = new Set<string>()
  answers.add(await send('02:00:00:00:00:01'))
  t.ok(await stored(kits.publicLegacy) > 0, 'a public SCK 1.0 by its MAC, as the kit sends it')
  answers.add(await send('02:00:00:00:00:02'))
  t.equal(await stored(kits.privateLegacy), 0, 'a private one: not by its MAC alone')
  answers.add(await send('02:00:00:00:00:02', 'not-the-key'))
  t.equal(await stored(kits.privateLegacy), 0, 'nor with a wrong X-SmartCitizenApiKey')
  answers.add(await send('02:00:00:00:00:02', legacyKey))
  t.ok(await stored(kits.privateLegacy) > 0, "with its owner's legacy_api_key, yes")
  answers.add(await send('02:00:00:00:00:03'))
  t.equal(await stored(kits.current), 0, 'an SCK 2.1 (MQTT hardware) takes nothing from /add')
  answers.add(await send('02:00:00:00:00:04'))
  t.equal(await stored(kits.noKit), 0, 'nor a device without a kit')
  answers.add(await send('02:00:00:00:00:99'))
  t.same([...answers], ['UTC:<clock>#'], 'every answer is the clock, stored or not, known or not')

  // The owner opts in by saying what the device is: an SCK 1.1.
  const patched = await app.inject({ method: 'PATCH', url: `/v0/devices/${kits.current}`, headers: bearer(owner.token), payload: { kit_id: 3 } })
  t.equal(patched.statusCode, 200, patched.body)
  await send('02:00:00:00:00:03')
  t.ok(await stored(kits.current) > 0, 'then /add stores into it')
  await database.sql`update devices set archived_at = now(), state = 'archived' where id = ${kits.publicLegacy}`
  const before = await stored(kits.publicLegacy)
  await send('02:00:00:00:00:01')
  t.equal(await stored(kits.publicLegacy), before, 'an archived device takes nothing')
})

t.test('/add: unknown MAC addresses count as failed device secrets, with guessed MQTT tokens, and lock the address out', async (t) => {
  const SMALL = { accountFailures: 3, addressFailures: 6, windowSeconds: 600, lockoutSeconds: 300, maxLockoutSeconds: 1200 }
  let now = Date.parse('2026-11-25T12:00:00Z')
  const harness = await buildPlatform(t, { mqtt: true, clock: () => new Date(now), auth: { throttle: SMALL } })
  const { app, database } = harness
  const owner = await signUp(app)
  const legacy = await makeDevice(database, owner.id, { kitId: 2, mac: '02:00:00:00:01:01' })
  const kit = await makeDevice(database, owner.id, { kitId: 26 })
  await database.sql`update devices set device_token = 'k1t0k3' where id = ${kit}`
  const add = async (mac: string): Promise<void> => {
    const res = await app.inject({ method: 'PUT', url: '/add', headers: { 'x-smartcitizenmacaddr': mac, 'x-smartcitizendata': JSON.stringify([{ temp: '20', timestamp: new Date(now - 60_000).toISOString() }]) } })
    t.equal(res.statusCode, 200)
    await app.legacyAddSettled()
  }
  const storedIn = async (id: number): Promise<number> => Number((await database.sql<{ n: number }[]>`select count(*)::int as n from readings where device_id = ${id}`)[0]?.n)
  // Half the address's budget by guessed MACs (one of them repeated: it counts once), half by guessed MQTT tokens.
  for (let i = 0; i < SMALL.addressFailures / 2; i++) await add(`02:aa:00:00:00:0${i}`)
  await add('02:aa:00:00:00:00')
  const mqttUrl = `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`
  for (let i = 0; i < SMALL.addressFailures / 2; i++) {
    const guess = `zz${i}zz0`
    const guesser = await connectMqtt(t, mqttUrl, { clientId: guess })
    await guesser.publishAsync(`device/sck/${guess}/readings/raw`, '{t:2026-11-25T11:00:00Z,55:21.5}', { qos: 1 })
    await guesser.endAsync()
  }
  await add('02:00:00:00:01:01')
  t.equal(await storedIn(legacy), 0, 'the address is locked: even the right MAC stores nothing')
  const device = await connectMqtt(t, mqttUrl, { clientId: 'k1t0k3' })
  const refused = await new Promise<boolean>((resolve) => {
    device.once('close', () => { resolve(true) })
    device.publish('device/sck/k1t0k3/readings/raw', '{t:2026-11-25T11:00:00Z,55:21.5}', { qos: 1 }, (err) => { if (err === undefined || err === null) resolve(false) })
  })
  t.ok(refused, 'and its MQTT publishes are refused, the right token too: one count for every device secret')
  now += SMALL.lockoutSeconds * 1000
  await add('02:00:00:00:01:01')
  t.ok(await storedIn(legacy) > 0, 'after the lockout the kit stores again')
})
