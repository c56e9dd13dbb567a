import t from 'tap'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { PARQUET_ROW_GROUP } from '@esp/domain'
import { bearer, errorBody, signUp } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

/**
 * The streamed export's Parquet and wide CSV formats (issue 23) over real HTTP against PostgreSQL:
 * every value read back by an independent reader (hyparquet), the wide CSV checked against a pivot
 * PostgreSQL makes, the privacy rule and the format's 400.
 */

const START = Date.UTC(2026, 8, 1)
const MINUTE = 60_000
/** minutes of readings: sensor 55 every minute, 56 every other one, 3 the first 1000 */
const MINUTES = 90_000
const temperature = (i: number): number => -10 + (i % 4001) / 100
const humidity = (i: number): number => Math.round(((i % 997) * 0.1 - 3.3) * 10) / 10

/** The contract's form: milliseconds only when the time has them. */
const contractTime = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z')

const toArrayBuffer = (bytes: Buffer): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer

t.test('streamed export as Parquet and as a wide CSV', async (t) => {
  const { app, database } = await buildPlatform(t)
  const owner = await signUp(app)
  const other = await signUp(app)
  const device = await makeDevice(database, owner.id, { isPrivate: true })
  for (let from = 0; from < MINUTES; from += 10_000) {
    const data = Array.from({ length: 10_000 }, (_, k) => {
      const i = from + k
      const sensors = [{ id: 55, value: temperature(i) }]
      if (i % 2 === 0) sensors.push({ id: 56, value: humidity(i) })
      if (i < 1000) sensors.push({ id: 3, value: i * 1.5 })
      return { recorded_at: new Date(START + i * MINUTE).toISOString(), sensors }
    })
    // A reading between two minutes, with milliseconds.
    if (from === 0) data.push({ recorded_at: new Date(START + 30_500).toISOString(), sensors: [{ id: 3, value: -0.25 }] })
    const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })
    t.equal(posted.statusCode, 200, posted.body)
  }
  // Readings without a (calibrated) value: the table allows them and every format must carry them.
  await database.sql`update readings set value = null where device_id = ${device} and sensor_id = 56 and recorded_at = any(${[2, 4000, 88_000].map((i) => new Date(START + i * MINUTE).toISOString())}::text[]::timestamptz[])`
  const total = MINUTES + MINUTES / 2 + 1000 + 1
  const url = `/v0/devices/${device}/readings/export`

  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  t.teardown(() => { app.server.closeAllConnections() })
  const get = async (query: string): Promise<{ res: Response, bytes: Buffer }> => {
    const res = await fetch(`${base}${url}?${query}`, { headers: bearer(owner.token) })
    return { res, bytes: Buffer.from(await res.arrayBuffer()) }
  }

  t.test('parquet: every row, value by value, in row groups', async (t) => {
    const { res, bytes } = await get('format=parquet')
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'application/vnd.apache.parquet')
    t.equal(res.headers.get('content-disposition'), `attachment; filename=device_${device}_readings.parquet`)
    t.equal(res.headers.get('transfer-encoding'), 'chunked', 'streamed, no length known up front')
    const file = toArrayBuffer(bytes)
    const metadata = parquetMetadata(file)
    t.equal(Number(metadata.num_rows), total)
    t.equal(metadata.row_groups.length, Math.ceil(total / PARQUET_ROW_GROUP), 'more than one row group, each full but the last')
    t.same(metadata.row_groups.map((g) => Number(g.num_rows)), [PARQUET_ROW_GROUP, total - PARQUET_ROW_GROUP])
    t.match(metadata.schema.slice(1), [
      { name: 'recorded_at', type: 'INT64', repetition_type: 'REQUIRED', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } },
      { name: 'sensor_id', type: 'INT32', repetition_type: 'REQUIRED' },
      { name: 'value', type: 'DOUBLE', repetition_type: 'OPTIONAL' }
    ])
    const rows = await parquetReadObjects({ file }) as { recorded_at: Date, sensor_id: number, value: number | null }[]
    const expected = await database.sql<{ ms: string, sensor_id: number, value: number | null }[]>`
      select (extract(epoch from recorded_at) * 1000)::int8::text as ms, sensor_id, value from readings where device_id = ${device} order by sensor_id, recorded_at`
    t.equal(rows.length, expected.length)
    let mismatches = 0
    expected.forEach((e, i) => {
      const row = rows[i]
      if (row === undefined || row.recorded_at.getTime() !== Number(e.ms) || row.sensor_id !== e.sensor_id || row.value !== e.value) mismatches++
    })
    t.equal(mismatches, 0, 'every time, sensor and value as stored, by sensor then time')
    t.equal(rows.filter((r) => r.value === null).length, 3, 'readings without a value are null')
    t.ok(rows.some((r) => r.value !== null && r.value < 0 && !Number.isInteger(r.value)), 'negative fractional values')
    t.same(rows.find((r) => r.recorded_at.getTime() === START + 30_500), { recorded_at: new Date(START + 30_500), sensor_id: 3, value: -0.25 }, 'milliseconds kept')
  })

  t.test('parquet: a range and a sensor, and a range with no readings', async (t) => {
    const { bytes } = await get('format=parquet&sensor_id=56&from=2026-09-01T01:00:00Z&to=2026-09-01T02:00:00Z')
    const rows = await parquetReadObjects({ file: toArrayBuffer(bytes) }) as { recorded_at: Date, sensor_id: number, value: number | null }[]
    t.equal(rows.length, 31, 'from and to both inclusive, one sensor')
    t.same(rows[0], { recorded_at: new Date(START + 60 * MINUTE), sensor_id: 56, value: humidity(60) })
    t.same(rows.at(-1), { recorded_at: new Date(START + 120 * MINUTE), sensor_id: 56, value: humidity(120) })

    const empty = await get('format=parquet&from=2020-01-01&to=2020-02-01')
    t.equal(empty.res.status, 200)
    const file = toArrayBuffer(empty.bytes)
    t.equal(empty.bytes.subarray(0, 4).toString('latin1'), 'PAR1')
    const metadata = parquetMetadata(file)
    t.equal(Number(metadata.num_rows), 0)
    t.same(metadata.row_groups, [], 'a valid file with the schema and no row groups')
    t.same(metadata.schema.slice(1).map((s) => s.name), ['recorded_at', 'sensor_id', 'value'])
    t.same(await parquetReadObjects({ file }), [])
  })

  t.test('csv_wide: a line a time, a column per sensor with a value in the range', async (t) => {
    const { res, bytes } = await get('format=csv_wide')
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^text\/csv; charset=utf-8/)
    t.equal(res.headers.get('content-disposition'), `attachment; filename=device_${device}_readings_wide.csv`)
    const lines = bytes.toString('utf8').trimEnd().split('\n')
    t.equal(lines[0], 'recorded_at,DHT22 [3],Air Temperature (ºC) [55],Relative Humidity (%) [56]', 'name (unit) [id], in sensor id order')
    t.same(lines.slice(1, 6), [
      `2026-09-01T00:00:00Z,0,${temperature(0)},${humidity(0)}`,
      '2026-09-01T00:00:30.500Z,-0.25,,',
      `2026-09-01T00:01:00Z,1.5,${temperature(1)},`,
      `2026-09-01T00:02:00Z,3,${temperature(2)},`,
      `2026-09-01T00:03:00Z,4.5,${temperature(3)},`
    ], 'times in order, empty cells where a sensor has no value (none posted, or null)')
    // The same grid pivoted by PostgreSQL, formatted here.
    const pivot = await database.sql<{ ms: string, a: number | null, b: number | null, c: number | null }[]>`
      select (extract(epoch from recorded_at) * 1000)::int8::text as ms, max(value) filter (where sensor_id = 3) as a,
        max(value) filter (where sensor_id = 55) as b, max(value) filter (where sensor_id = 56) as c
      from readings where device_id = ${device} group by recorded_at order by recorded_at`
    const cell = (v: number | null): string => v === null ? '' : String(v)
    const expected = pivot.map((p) => `${contractTime(Number(p.ms))},${cell(p.a)},${cell(p.b)},${cell(p.c)}`)
    t.equal(lines.length - 1, expected.length, 'one line per distinct time')
    t.equal(expected.filter((line, i) => lines[i + 1] !== line).length, 0, 'every line as PostgreSQL pivots it')

    const later = (await get('format=csv_wide&from=2026-09-02&to=2026-09-02T00:02:00Z')).bytes.toString('utf8')
    t.equal(later, `recorded_at,Air Temperature (ºC) [55],Relative Humidity (%) [56]\n2026-09-02T00:00:00Z,${temperature(1440)},${humidity(1440)}\n` +
      `2026-09-02T00:01:00Z,${temperature(1441)},\n2026-09-02T00:02:00Z,${temperature(1442)},${humidity(1442)}\n`, 'only the sensors with a reading in the range')
    t.equal((await get('format=csv_wide&sensor_id=3&to=2026-09-01T00:01:00Z')).bytes.toString('utf8'), 'recorded_at,DHT22 [3]\n2026-09-01T00:00:00Z,0\n2026-09-01T00:00:30.500Z,-0.25\n2026-09-01T00:01:00Z,1.5\n', 'one sensor')
    t.equal((await get('format=csv_wide&from=2020-01-01&to=2020-02-01')).bytes.toString('utf8'), 'recorded_at\n', 'no readings: the header alone')
  })

  t.test('privacy and bad formats', async (t) => {
    for (const format of ['parquet', 'csv_wide']) {
      for (const headers of [{}, bearer(other.token)]) {
        const refused = await app.inject({ url: `${url}?format=${format}`, headers })
        const missing = await app.inject({ url: `/v0/devices/999999/readings/export?format=${format}`, headers })
        t.same([refused.statusCode, refused.headers['content-type'], refused.body], [404, missing.headers['content-type'], missing.body.replaceAll('999999', String(device))],
          `${format}: a private device is hidden from others, answered as an id that names no device`)
      }
    }
    const bad = await app.inject({ url: `${url}?format=xlsx`, headers: bearer(owner.token) })
    t.equal(bad.statusCode, 400)
    t.match(errorBody(bad), { id: 'bad_request', message: /csv, ndjson, csv_wide, parquet/, errors: { format: [String] }, url: null })
  })
})

t.test('a to printed to the second includes the reading at that second, milliseconds and all (issue 35)', async (t) => {
  const { app, database } = await buildPlatform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: '2026-11-20T10:00:32.076Z', sensors: [{ id: 55, value: 21.5 }] }] } })
  t.equal(posted.statusCode, 200, posted.body)
  const printed = (await app.inject({ url: `/v0/devices/${device}`, headers: bearer(owner.token) })).json().last_reading_at as string
  t.equal(printed, '2026-11-20T10:00:32Z', 'last_reading_at prints whole seconds')
  const rows = async (to: string): Promise<string[]> => {
    const res = await app.inject({ url: `/v0/devices/${device}/readings/export?format=csv&to=${encodeURIComponent(to)}`, headers: bearer(owner.token) })
    t.equal(res.statusCode, 200, res.body)
    return res.body.trim().split('\n').slice(1)
  }
  t.equal((await rows(printed)).length, 1, 'to=last_reading_at exports the newest reading')
  t.equal((await rows('2026-11-20T10:00:32.000Z')).length, 0, 'a to with milliseconds is exact')
})
