import t from 'tap'
import { addDevice, call, postReadings, signUp, signUpAs, startPlatform } from './platform.js'
import { runPython } from './python.js'
import { rawHttp } from './raw.js'

/**
 * clients.md §4 rules 19–25: time values, the readings query (GET /devices/:id/readings) as the
 * web's chart and the connector read it, and readings writes as the connector and the web's
 * SD-card upload send them.
 */
const platform = await startPlatform(t)
const { base, httpPort } = platform
const owner = await signUp(platform)

interface History {
  device_id: number
  sensor_id: number
  sensor_key: string | null
  component_id: number | null
  rollup: string
  function: string
  from: string
  to: string
  sample_size: number
  readings: Array<[string, number | null]>
}
const readingsOf = async (deviceId: number, query: string): Promise<History> => {
  const res = await call(`${base}/devices/${deviceId}/readings?${query}`)
  if (res.status !== 200) throw new Error(`readings ${query}: ${res.status} ${res.text}`)
  return res.json as History
}
const sorted = (pairs: Array<[string, number | null]>): Array<[string, number | null]> => [...pairs].sort((a, b) => a[0].localeCompare(b[0]))

const UTC_SECOND = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/
const UTC_MILLISECOND = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const LOOKS_LIKE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/

/** Every string in a JSON value that looks like a date and time, with where it is. */
function times (value: unknown, at = '$'): Array<[string, string]> {
  if (typeof value === 'string') return LOOKS_LIKE_TIME.test(value) ? [[at, value]] : []
  if (Array.isArray(value)) return value.flatMap((v, i) => times(v, `${at}[${i}]`))
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => times(v, `${at}.${k}`))
  return []
}

t.test('rule 19: every datetime in a response is YYYY-MM-DDTHH:MM:SSZ', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Clock' })
  await postReadings(platform, owner, device.id, [{ recorded_at: '2026-03-02T10:21:32.076Z', sensors: [{ id: 55, value: 21.5 }] }])
  const experiment = await call(`${base}/experiments`, { method: 'POST', token: owner.token, json: { name: 'Times', starts_at: '2026-01-01T00:00:00.500+01:00', ends_at: '2026-12-31 23:00:00', device_ids: [device.id] } })
  const admin = await signUpAs(platform, 'admin')
  await call(`${base}/tags`, { method: 'POST', token: admin.token, json: { name: 'Clockwork' } })
  const answers: Array<[string, unknown]> = []
  for (const [path, token] of [
    [`/devices/${device.id}`, owner.token], [`/devices/${device.id}`, undefined], ['/devices', undefined], ['/devices/world_map', undefined],
    ['/devices/fresh_world_map', owner.token], ['/me', owner.token], [`/users/${owner.id}`, undefined], ['/users', undefined],
    ['/sensors?per_page=1000', undefined], ['/measurements?per_page=1000', undefined], ['/kits', undefined], ['/tags', undefined],
    ['/experiments', undefined], [`/experiments/${(experiment.json as { id: number }).id}`, undefined], ['/search?q=Clock', undefined],
    [`/devices/${device.id}/readings?sensor_id=55&rollup=1m&from=2026-03-02T10:00:00.000Z&to=2026-03-02T11:00:00.000Z`, undefined],
    [`/devices/${device.id}/readings?sensor_id=55&rollup=0s&from=2026-03-02%2010:00:00+00:00&to=1772450000`, undefined],
    ['/', undefined]
  ] as const) {
    const res = await call(`${base}${path}`, token === undefined ? {} : { token })
    t.equal(res.status, 200, `GET ${path}`)
    answers.push([path, res.json])
  }
  // Raw readings (rollup 0s, ms) are the one place where a time keeps its milliseconds: two
  // readings of one second stay apart. They are still UTC with a zone, which is what the
  // connector (tz-aware comparisons) and moment need.
  const rawPair = (path: string, at: string): boolean => path.includes('rollup=0s') && at.startsWith('$.readings[')
  const bad = answers.flatMap(([path, body]) => times(body)
    .filter(([at, v]) => !(UTC_SECOND.test(v) || (rawPair(path, at) && UTC_MILLISECOND.test(v))))
    .map(([at, v]) => `${path} ${at} = ${v}`))
  t.same(bad, [], 'no datetime without a zone or with an offset; milliseconds only in raw readings')
  t.ok(answers.reduce((n, [, body]) => n + times(body).length, 0) > 50, 'the responses carry many datetimes')
})

t.test('rule 19 (C2): to = the device\'s last_reading_at includes the reading of that second stored with milliseconds', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Milliseconds' })
  await postReadings(platform, owner, device.id, [
    { recorded_at: '2026-03-02T10:20:00Z', sensors: [{ id: 55, value: 20 }] },
    { recorded_at: '2026-03-02T10:21:32.076Z', sensors: [{ id: 55, value: 21.5 }] }
  ])
  const shown = (await call(`${base}/devices/${device.id}`, { token: owner.token })).json as { last_reading_at: string }
  t.equal(shown.last_reading_at, '2026-03-02T10:21:32Z')
  const raw = await readingsOf(device.id, `sensor_id=55&rollup=0s&from=2026-03-02T10:00:00Z&to=${shown.last_reading_at}`)
  t.equal(raw.readings.length, 2, `raw readings up to last_reading_at: both (${JSON.stringify(raw.readings)})`)
  const minute = await readingsOf(device.id, `sensor_id=55&rollup=1m&from=2026-03-02T10:00:00Z&to=${shown.last_reading_at}`)
  t.same(sorted(minute.readings), [['2026-03-02T10:20:00Z', 20], ['2026-03-02T10:21:00Z', 21.5]], '1m buckets up to last_reading_at: both')
  // The connector caps max_date at last_reading_at and pastes its pandas form.
  const [datum] = await runPython<Array<{ status: number, readings: Array<[string, number]> | null }>>('connector.py', { cmd: 'readings', base, device_id: device.id, sensor_ids: [55], rollup: '1m', min_date: '2026-03-02 10:00:00+00:00', max_date: '2026-03-02 10:21:32+00:00' })
  t.equal(datum?.status, 200)
  t.equal(datum?.readings?.length, 2, 'the connector gets the last reading too')
})

t.test('rule 20: recorded_at as YYYY-MM-DDTHH:MM:SSZ and as YYYY-MM-DD HH:MM:SS without a zone (UTC)', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Forms' })
  const posted = await postReadings(platform, owner, device.id, [
    { recorded_at: '2026-03-01T22:14:00Z', sensors: [{ id: 55, value: 1 }] },
    { recorded_at: '2026-03-01 22:15:00', sensors: [{ id: 55, value: 2 }] }
  ])
  t.ok(posted.status === 200 || posted.status === 201, `stored (${posted.status} ${posted.text.slice(0, 200)})`)
  const back = await readingsOf(device.id, 'sensor_id=55&rollup=0s&from=2026-03-01T22:00:00Z&to=2026-03-01T23:00:00Z')
  t.same(sorted(back.readings), [['2026-03-01T22:14:00Z', 1], ['2026-03-01T22:15:00Z', 2]], 'both stored, the zone-less one as UTC')
})

t.test('rule 20: timestamps far in the past are accepted back to 1990-01-01; older is refused with a 422', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Backlog' })
  for (const at of ['2001-01-01T00:00:00Z', '2001-06-15T12:30:00Z', '1990-01-01T00:00:00Z']) {
    const res = await postReadings(platform, owner, device.id, [{ recorded_at: at, sensors: [{ id: 55, value: 7 }] }])
    t.ok(res.status === 200 || res.status === 201, `${at}: accepted (${res.status} ${res.text.slice(0, 160)})`)
    const back = await readingsOf(device.id, `sensor_id=55&rollup=0s&from=${at}&to=${at}`)
    t.same(back.readings, [[at, 7]], `${at}: stored`)
  }
  // The connector posts with its own client, from 2001 (its default min_date).
  const viaConnector = await runPython<{ statuses: number[] }>('connector.py', { cmd: 'post', base, device_id: device.id, sensor_id: 56, points: [['2001-01-01T00:01:00Z', 50.5]] }, { SC_BEARER: owner.token })
  t.same(viaConnector.statuses.filter((s) => s !== 200 && s !== 201), [], 'the connector\'s post of 2001 succeeds')
  const old = await postReadings(platform, owner, device.id, [{ recorded_at: '1989-12-31T23:59:59Z', sensors: [{ id: 55, value: 7 }] }])
  t.equal(old.status, 422, 'before 1990-01-01: 422')
  t.match(old.json, { id: String, message: String })
})

t.test('rule 21: the answer is an object with device_id, sensor_id, sensor_key, component_id, rollup, function, from, to, sample_size and [time, value] pairs', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Shape' })
  await postReadings(platform, owner, device.id, [0, 1, 3].map((m) => ({ recorded_at: `2026-02-23T23:0${m}:10Z`, sensors: [{ id: 55, value: 10 + m }] })))
  // W5 as the web builds it: moment ISO strings, a rollup in seconds, all_intervals, no function.
  const body = await readingsOf(device.id, 'from=2026-02-23T23:00:00.000Z&to=2026-02-23T23:04:59.000Z&rollup=60s&sensor_id=55&all_intervals=true')
  t.match(body, { device_id: device.id, sensor_id: 55, rollup: '60s', function: 'avg', from: '2026-02-23T23:00:00Z', to: '2026-02-23T23:04:59Z', sample_size: 3 })
  t.type(body.device_id, 'number')
  t.ok(typeof body.sensor_key === 'string' || body.sensor_key === null, 'sensor_key')
  t.ok(typeof body.component_id === 'number' || body.component_id === null, 'component_id')
  t.ok(body.readings.every((pair) => Array.isArray(pair) && typeof pair[0] === 'string' && (typeof pair[1] === 'number' || pair[1] === null)), 'pairs of time and value')
  t.same(sorted(body.readings), [['2026-02-23T23:00:00Z', 10], ['2026-02-23T23:01:00Z', 11], ['2026-02-23T23:02:00Z', null], ['2026-02-23T23:03:00Z', 13], ['2026-02-23T23:04:00Z', null]], 'an empty bucket is null: the chart draws a gap')
})

t.test('rule 22: the order of points is free; each time appears once and the order is monotonic', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Order' })
  // Posted out of order, as a backlog and an SD upload may arrive.
  await postReadings(platform, owner, device.id, [5, 1, 3, 2, 4].map((m) => ({ recorded_at: `2026-02-01T10:0${m}:00Z`, sensors: [{ id: 55, value: m }] })))
  const body = await readingsOf(device.id, 'sensor_id=55&rollup=1m&from=2026-02-01T10:00:00Z&to=2026-02-01T11:00:00Z')
  const at = body.readings.map(([time]) => time)
  t.equal(new Set(at).size, at.length, 'no time twice')
  const ascending = at.every((time, i) => i === 0 || time > (at[i - 1] as string))
  const descending = at.every((time, i) => i === 0 || time < (at[i - 1] as string))
  t.ok(ascending || descending, `one direction (${ascending ? 'oldest' : 'newest'} first)`)
  t.same(sorted(body.readings).map(([, v]) => v), [1, 2, 3, 4, 5])
})

t.test('rule 23: bucket times line up with from: rollup=1m from 2022-09-10T00:00:00Z starts with the bucket at from', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Aligned' })
  await postReadings(platform, owner, device.id, ['00:00:20', '00:00:40', '00:01:10', '00:05:59', '00:17:30'].map((at, i) => ({ recorded_at: `2022-09-10T${at}Z`, sensors: [{ id: 55, value: i }] })))
  const from = '2022-09-10T00:00:00Z'
  for (const rollup of ['1m', '10m', '60s']) {
    const body = await readingsOf(device.id, `sensor_id=55&rollup=${rollup}&from=${from}&to=2022-09-10T01:00:00Z&function=avg`)
    const first = sorted(body.readings)[0]?.[0] ?? ''
    const width = rollup === '10m' ? 600_000 : 60_000
    t.ok(Date.parse(first) >= Date.parse(from) && Date.parse(first) < Date.parse(from) + width, `${rollup}: the first point ${first} is in [from, from + ${rollup})`)
    t.ok(body.readings.every(([at]) => (Date.parse(at) - Date.parse(from)) % width === 0), `${rollup}: every bucket starts a whole number of buckets after from`)
  }
  const [datum] = await runPython<Array<{ readings: Array<[string, number]> | null }>>('connector.py', { cmd: 'readings', base, device_id: device.id, sensor_ids: [55], rollup: '1m', min_date: '2022-09-10 00:00:00+00:00', max_date: '2022-09-10 01:00:00+00:00' })
  t.equal(sorted(datum?.readings ?? [])[0]?.[0], from, 'the connector\'s test: the first 1-minute bin equals from')
})

t.test('rule 24: a sensor without data, or not on the device, answers readings: [] rather than an error', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Quiet' })
  await postReadings(platform, owner, device.id, [{ recorded_at: '2026-01-01T00:00:00Z', sensors: [{ id: 55, value: 1 }] }])
  for (const [label, sensor] of [['a sensor of the kit that never sent anything', 56], ['a sensor not on the device (DHT22)', 3]] as const) {
    const res = await call(`${base}/devices/${device.id}/readings?sensor_id=${sensor}&rollup=1h&from=2025-12-01&to=2026-02-01`)
    t.equal(res.status, 200, `${label}: 200`)
    t.same((res.json as History).readings, [], `${label}: readings []`)
  }
  const [datum] = await runPython<Array<{ status: number, readings: unknown[] | null }>>('connector.py', { cmd: 'readings', base, device_id: device.id, sensor_ids: [56], rollup: '1m', min_date: '2001-01-01 00:00:00+00:00' })
  t.same(datum?.readings, [], 'the connector sees "no data", not an error')
})

t.test('rule 25: the connector\'s posts: chunks of 500 entries of one sensor each, integer ids and float values', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Connector upload' })
  const start = Date.parse('2025-06-01T00:00:00Z')
  const points = Array.from({ length: 1200 }, (_, i) => [new Date(start + i * 60_000).toISOString().replace('.000Z', 'Z'), 20 + (i % 50) / 10])
  for (const sensor of [55, 56]) {
    const posted = await runPython<{ statuses: number[] }>('connector.py', { cmd: 'post', base, device_id: device.id, sensor_id: sensor, points }, { SC_BEARER: owner.token })
    t.equal(posted.statuses.length, 3, `sensor ${sensor}: three requests of at most 500 entries`)
    t.same(posted.statuses.filter((s) => s !== 200 && s !== 201), [], `sensor ${sensor}: each answered 200 or 201`)
    const back = await readingsOf(device.id, `sensor_id=${sensor}&rollup=0s&from=2025-06-01T00:00:00Z&to=2025-06-02T00:00:00Z`)
    t.equal(back.readings.length, 1200, `sensor ${sensor}: all 1200 readings stored`)
  }
})

t.test('rule 25: the web\'s SD-card upload: the whole CSV in one request, thousands of entries with many sensors each', async (t) => {
  const device = await addDevice(platform, owner, { name: 'SD card' })
  const ids = [10, 221, 14, 55, 56, 53, 58, 113, 112, 89, 87, 88]
  const start = Date.parse('2025-07-01T00:00:00Z')
  // Papa Parse's dynamic typing: numbers; pairs whose value is 0 are dropped by the client.
  const data = Array.from({ length: 3000 }, (_, row) => ({
    recorded_at: new Date(start + row * 60_000).toISOString().replace('.000Z', 'Z'),
    sensors: ids.map((id, k) => ({ id, value: Math.round((row * 0.37 + k + 1) * 100) / 100 }))
  }))
  const body = JSON.stringify({ data })
  t.ok(body.length > 1024 * 1024, `a body of ${(body.length / 1024 / 1024).toFixed(1)} MB`)
  const res = await call(`${base}/devices/${device.id}/readings`, { method: 'POST', token: owner.token, headers: { 'content-type': 'application/json' }, body })
  t.ok(res.status === 200 || res.status === 201, `one request: ${res.status} ${res.text.slice(0, 200)}`)
  const back = await readingsOf(device.id, 'sensor_ids=all&rollup=1d&function=count&from=2025-07-01&to=2025-07-05')
  const counts = (back as unknown as { sensors: Array<{ sensor_id: number, readings: Array<[string, number | null]> }> }).sensors
    .map((s) => [s.sensor_id, s.readings.reduce((n, [, v]) => n + (v ?? 0), 0)] as const)
  t.same(counts.filter(([, n]) => n !== 3000), [], `every sensor has its 3000 readings (${counts.length} sensors)`)
  t.equal(counts.length, ids.length)
})

t.test('rule 25: sensor keys in place of ids, and latest values advance only with a newer entry', async (t) => {
  const device = await addDevice(platform, owner, { name: 'Latest' })
  const key = (await readingsOf(device.id, 'sensor_id=55&rollup=1h')).sensor_key
  t.type(key, 'string', 'sensor 55 has a key on the kit')
  const byKey = await postReadings(platform, owner, device.id, [{ recorded_at: '2026-02-02T10:00:00Z', sensors: [{ id: key ?? '', value: 21 }] }])
  t.ok(byKey.status === 200 || byKey.status === 201, `posted by key "${key}" (${byKey.status} ${byKey.text.slice(0, 160)})`)
  const older = await postReadings(platform, owner, device.id, [{ recorded_at: '2026-02-02T09:00:00Z', sensors: [{ id: 55, value: 5 }] }])
  t.equal(older.status, 200)
  const shown = (await call(`${base}/devices/${device.id}`, { token: owner.token })).json as { last_reading_at: string, data: { sensors: Array<{ id: number, value: number | null }> } }
  t.equal(shown.last_reading_at, '2026-02-02T10:00:00Z', 'an older entry does not move last_reading_at back')
  t.equal(shown.data.sensors.find((s) => s.id === 55)?.value, 21, 'nor the latest value')
  const back = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?sensor_id=55&rollup=0s&from=2026-02-02T00:00:00Z&to=2026-02-03T00:00:00Z`)
  t.equal((back.json as History).readings.length, 2, 'both are stored')
})
