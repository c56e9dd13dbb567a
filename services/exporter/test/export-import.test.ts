import t, { type Test } from 'tap'
import { exporterService } from '@esp/exporter'
import { ingestService } from '@esp/ingest'
import { bearer, buildApi, errorBody, signUp } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'

async function platform (t: Test) {
  const harness = await buildApi(t, {
    extra: async (app, database, dataDir) => {
      await app.register(ingestService, { database, maxValues: 100_000, maxFutureSeconds: 86_400 })
      await app.register(exporterService, { database, dataDir, mailFrom: 'Test <test@example.org>', pollingIntervalSeconds: 0.5, schedules: false })
    }
  })
  return harness
}

const START = Date.UTC(2026, 9, 1)

t.test('streamed export: csv and ndjson, chunked, filters, privacy', async (t) => {
  const { app, database } = await platform(t)
  const owner = await signUp(app)
  const other = await signUp(app)
  const device = await makeDevice(database, owner.id, { isPrivate: true })
  const data = Array.from({ length: 3000 }, (_, i) => ({
    recorded_at: new Date(START + i * 60_000).toISOString(),
    sensors: [{ id: 55, value: 20 + i / 1000 }, { id: 56, value: 0.1 * (i % 10) }]
  }))
  t.equal((await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })).statusCode, 200)
  const url = `/v0/devices/${device}/readings/export`

  t.equal((await app.inject({ url })).statusCode, 404, 'a private device is hidden from anonymous callers, as for readings')
  t.equal((await app.inject({ url, headers: bearer(other.token) })).statusCode, 404)
  t.equal((await app.inject({ url: '/v0/devices/999999/readings/export', headers: bearer(owner.token) })).statusCode, 404)

  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const res = await fetch(`${base}${url}`, { headers: bearer(owner.token) })
  t.equal(res.status, 200)
  t.equal(res.headers.get('transfer-encoding'), 'chunked', 'streamed, no length known up front')
  t.match(res.headers.get('content-type'), /^text\/csv/)
  t.match(res.headers.get('content-disposition'), /attachment; filename=device_\d+_readings\.csv/)
  const lines = (await res.text()).trimEnd().split('\n')
  t.equal(lines[0], 'recorded_at,sensor_id,value')
  t.equal(lines.length, 1 + 6000, 'one line per value, no cap')
  const expected = [55, 56].flatMap((sensor) => data.map((d) => `${d.recorded_at.replace('.000Z', 'Z')},${sensor},${String(d.sensors.find((s) => s.id === sensor)?.value)}`))
  let mismatches = 0
  expected.forEach((line, i) => { if (lines[i + 1] !== line) mismatches++ })
  t.equal(mismatches, 0, 'every value exactly, by sensor then time')

  const filtered = await app.inject({ url: `${url}?format=ndjson&sensor_id=56&from=2026-10-01T01:00:00Z&to=2026-10-01T02:00:00Z`, headers: bearer(owner.token) })
  t.equal(filtered.statusCode, 200)
  t.match(filtered.headers['content-type'], /^application\/x-ndjson/)
  const objects = filtered.body.trimEnd().split('\n').map((l) => JSON.parse(l) as { recorded_at: string, sensor_id: number, value: number })
  t.equal(objects.length, 61, 'from and to both inclusive, one sensor')
  t.same(objects[0], { recorded_at: '2026-10-01T01:00:00Z', sensor_id: 56, value: 0 })
  t.same(objects.at(-1), { recorded_at: '2026-10-01T02:00:00Z', sensor_id: 56, value: 0 })
  t.same(objects[1], { recorded_at: '2026-10-01T01:01:00Z', sensor_id: 56, value: 0.1 })

  for (const [query, field] of [['format=xml', 'format'], ['from=yesterday-ish', 'from'], ['sensor_id=abc', 'sensor_id'], ['from=2026-10-02&to=2026-10-01', 'from']] as const) {
    const bad = await app.inject({ url: `${url}?${query}`, headers: bearer(owner.token) })
    t.equal(bad.statusCode, 400, query)
    t.match(errorBody(bad), { id: /^(bad_request|parameter_invalid|invalid_parameters)$/ }, query)
    t.ok(JSON.stringify(errorBody(bad)).includes(field), `${query} names ${field}`)
  }
  t.equal((await app.inject({ url: `${url}?sensor_id=999999`, headers: bearer(owner.token) })).statusCode, 404)

  // A client that goes away half-way: the COPY is cancelled and its connection closed.
  const big = Array.from({ length: 20_000 }, (_, i) => ({ recorded_at: new Date(START + (10_000 + i) * 60_000).toISOString(), sensors: [{ id: 55, value: i }, { id: 56, value: i }, { id: 10, value: i }] }))
  for (let i = 0; i < big.length; i += 5000) {
    t.equal((await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: big.slice(i, i + 5000) } })).statusCode, 200)
  }
  const abort = new AbortController()
  const partial = await fetch(`${base}${url}?format=ndjson`, { headers: bearer(owner.token), signal: abort.signal })
  const reader = partial.body?.getReader()
  await reader?.read()
  abort.abort()
  let open = -1
  for (let i = 0; i < 100 && open !== 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    open = (await database.sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where application_name = 'esp-export' and datname = current_database()`)[0]?.n ?? -1
  }
  t.equal(open, 0, 'no export connection left behind')
  const after = await app.inject({ url: `${url}?sensor_id=10`, headers: bearer(owner.token) })
  t.equal(after.body.trimEnd().split('\n').length, 20_001, 'later exports still work')
  // fetch keeps its connections alive; without this the close waits for the keep-alive timeout.
  app.server.closeAllConnections()
})

t.test('historical CSV import: validated whole, stored by a job through the write path, progress polled', async (t) => {
  const { app, database } = await platform(t)
  const owner = await signUp(app)
  const other = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 26 })
  const url = `/v0/devices/${device}/readings/csv`
  const rows = Array.from({ length: 25_000 }, (_, i) => `${new Date(START + i * 60_000).toISOString().replace('.000Z', 'Z')},${(20 + i / 1000).toFixed(3)},${i % 3 === 0 ? '' : (i % 100).toString()}`)
  const file = ['TIME,TEMP,HUM', 'UTC,C,%', 'Time,Temperature,Humidity', 'TIME,55,56', ...rows].join('\r\n') + '\r\n'
  const headers = { ...bearer(owner.token), 'content-type': 'text/csv' }

  t.equal((await app.inject({ method: 'POST', url, payload: file, headers: { 'content-type': 'text/csv' } })).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url, payload: file, headers: { ...bearer(other.token), 'content-type': 'text/csv' } })).statusCode, 403)

  // One bad value at the end: nothing is stored, every problem is named.
  const bad = await app.inject({ method: 'POST', url, headers, payload: file.replace(/\r\n$/, '\r\n2026-11-01T00:00:00Z,abc,5\r\nnot a time,1,2\r\n') })
  t.equal(bad.statusCode, 422)
  t.match(errorBody(bad), { id: 'unprocessable_entity', errors: { 'line 25005': [/"abc" is not a number/], 'line 25006': [/not a time/] } })
  const ancient = await app.inject({ method: 'POST', url, headers, payload: 'TIME,55\n1980-01-01T00:00:00Z,1\n2026-10-01T00:00:00Z,1\n' })
  t.equal(ancient.statusCode, 422)
  t.match(errorBody(ancient), { errors: { 'line 2': ['1980-01-01T00:00:00Z is before 1990-01-01T00:00:00Z, the oldest time accepted'] } }, 'the bound of every path, named')
  const [before] = await database.sql<{ n: number }[]>`select count(*)::int as n from readings where device_id = ${device}`
  t.equal(before?.n, 0, 'nothing stored from refused files')

  const accepted = await app.inject({ method: 'POST', url, headers, payload: file })
  t.equal(accepted.statusCode, 202, accepted.body)
  const created = accepted.json()
  t.match(created, { device_id: device, state: 'queued', rows_total: 25_000, rows_done: 0, values_total: 25_000 + 16_666, error: null, finished_at: null })
  t.match(accepted.headers.location, new RegExp(`/v0/devices/${device}/readings/csv/${created.id}$`))
  let status = created
  const states = new Set<string>()
  for (let i = 0; i < 300 && status.state !== 'done' && status.state !== 'failed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    const polled = await app.inject({ url: `${url}/${created.id}`, headers: bearer(owner.token) })
    t.equal(polled.statusCode, 200)
    status = polled.json()
    states.add(status.state)
  }
  t.match(status, { state: 'done', rows_done: 25_000, stored: 41_666, duplicates: 0, error: null, finished_at: /Z$/ })
  t.equal((await app.inject({ url: `${url}/${created.id}`, headers: bearer(other.token) })).statusCode, 403, 'progress is the owner\'s')
  t.equal((await app.inject({ url: `${url}/999999`, headers: bearer(owner.token) })).statusCode, 404)

  const [stored] = await database.sql<{ n: number, last: string }[]>`select count(*)::int as n from readings where device_id = ${device}`
  t.equal(stored?.n, 41_666, 'every value stored')
  const history = await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=56&rollup=1h&function=count&from=2026-10-01T00:00:00Z&to=2026-10-01T00:59:59Z` })
  t.match(history.json(), { readings: [[/^2026-10-01T00:00:00Z$/, 40]] }, 'the tiers and history see the import as posted readings')
  const [latest] = await database.sql<{ at: string }[]>`select last_reading_at::text as at from devices where id = ${device}`
  t.match(latest?.at, /^2026-10-18 08:39:00/, 'the device\'s last reading moved forward')

  const again = await app.inject({ method: 'POST', url, headers, payload: file })
  const id = again.json().id as number
  for (let i = 0; i < 300; i++) {
    status = (await app.inject({ url: `${url}/${id}`, headers: bearer(owner.token) })).json()
    if (status.state === 'done') break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.match(status, { state: 'done', stored: 0, duplicates: 41_666 }, 'a second import of the same file stores nothing twice')
})

t.test('CSV import: a column of a sensor the catalogue lacks is skipped and reported, the others stored (issue 35)', async (t) => {
  const { app, database } = await platform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 26 })
  const url = `/v0/devices/${device}/readings/csv`
  const file = 'TIME,55,999999,56\n2026-10-01T00:00:00Z,1,2,-0.0\n2026-10-01T00:01:00Z,3,,4\n'
  const accepted = await app.inject({ method: 'POST', url, headers: { ...bearer(owner.token), 'content-type': 'text/csv' }, payload: file })
  t.equal(accepted.statusCode, 202, accepted.body)
  const id = accepted.json().id as number
  let status: { state?: string, skipped?: unknown } = {}
  for (let i = 0; i < 300 && status.state !== 'done' && status.state !== 'failed'; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    status = (await app.inject({ url: `${url}/${id}`, headers: bearer(owner.token) })).json()
  }
  t.equal(status.state, 'done')
  t.same(status.skipped, { count: 1, unknown_sensors: [999999], items: [{ path: 'line 2, column 3', sensor: 999999 }] }, 'the import\'s status names what it skipped')
  const [imported] = await database.sql<Array<{ stored: number, skipped: unknown }>>`select stored, skipped from reading_imports where id = ${id}`
  t.same({ ...imported }, { stored: 4, skipped: { count: 1, unknown_sensors: [999999], items: [{ path: 'line 2, column 3', sensor: 999999 }] } }, 'the import keeps what it skipped')
  const rows = await database.sql`select sensor_id, value, raw_value from readings where device_id = ${device} order by recorded_at, sensor_id`
  t.same(rows.map((r) => ({ ...r })), [
    { sensor_id: 55, value: 1, raw_value: 1 },
    { sensor_id: 56, value: 0, raw_value: 0 },
    { sensor_id: 55, value: 3, raw_value: 3 },
    { sensor_id: 56, value: 4, raw_value: 4 }
  ])
  t.ok(Object.is(rows[1]?.value, 0) && Object.is(rows[1]?.raw_value, 0), '-0.0 is stored as 0')
  const seen = (await app.inject({ url: `/v0/devices/${device}`, headers: bearer(owner.token) })).json()
  t.match(seen.ingest, { unknown_sensors: [999999], skipped_values: 1, rejected_messages: 0, last_rejection: null }, "the device's owner hears of it too")
})

t.test('CSV import: quoted cells may hold commas and quotes, and semicolon-separated files (decimal commas) are read', async (t) => {
  const { app, database } = await platform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 26 })
  const url = `/v0/devices/${device}/readings/csv`
  const headers = { ...bearer(owner.token), 'content-type': 'text/csv' }
  const done = async (payload: string): Promise<{ state?: string, stored?: number }> => {
    const accepted = await app.inject({ method: 'POST', url, headers, payload })
    t.equal(accepted.statusCode, 202, accepted.body)
    const id = accepted.json().id as number
    let status: { state?: string, stored?: number } = {}
    for (let i = 0; i < 300 && status.state !== 'done' && status.state !== 'failed'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      status = (await app.inject({ url: `${url}/${id}`, headers: bearer(owner.token) })).json()
    }
    return status
  }
  const quoted = [
    '"TIME","Temperature, internal","Humidity ""relative"""',
    'UTC,"°C, calibrated",%',
    'TIME,55,56',
    '2026-10-01T00:00:00Z,"21.5",60',
    '"2026-10-01T00:01:00Z", 22 ,"61"'
  ].join('\r\n') + '\r\n'
  t.match(await done(quoted), { state: 'done', stored: 4 }, 'a quoted comma is no separator')
  const semicolons = [
    'TIME;Temperatur, innen;Feuchte',
    'TIME;55;56',
    '2026-10-01T00:02:00Z;21,5;60',
    '2026-10-01T00:03:00Z;"22,25";61'
  ].join('\n') + '\n'
  t.match(await done(semicolons), { state: 'done', stored: 4 }, 'a semicolon-separated file')
  const rows = await database.sql<{ sensor_id: number, value: number }[]>`select sensor_id, value from readings where device_id = ${device} order by recorded_at, sensor_id`
  t.same(rows.map((r) => [r.sensor_id, r.value]), [[55, 21.5], [56, 60], [55, 22], [56, 61], [55, 21.5], [56, 60], [55, 22.25], [56, 61]])

  // The rules and messages of comma-separated files hold for semicolons, by line and column.
  const bad = await app.inject({ method: 'POST', url, headers, payload: 'TIME;55;56\n2026-10-01T00:04:00Z;abc;1\n\n2026-10-01T00:05:00Z;1;2;3\n' })
  t.equal(bad.statusCode, 422)
  t.match(errorBody(bad), { errors: { 'line 2': ['column 2: "abc" is not a number'], 'line 4': ['has 4 columns, the header 3'] } })
  const unclosed = await app.inject({ method: 'POST', url, headers, payload: 'TIME,55\n2026-10-01T00:04:00Z,"1\n' })
  t.equal(unclosed.statusCode, 422)
  t.match(errorBody(unclosed), { errors: { 'line 2': [/cannot be read as CSV/] } })
})
