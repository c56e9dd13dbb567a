import t from 'tap'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { MAX_EXPORT_DEVICE_IDS } from '@esp/domain'
import { bearer, errorBody, signUp } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

/**
 * The export across devices (issue 23) over real HTTP against PostgreSQL: devices chosen by ids,
 * a tag or a bounding box; every format checked row by row against the readings table in the
 * export's order (time, device, sensor); resuming from the last time held, at generated points
 * where a connection could break; the privacy rule; bad selections answered with a 400.
 */

const MINUTE = 60_000
const DAY = 1440 * MINUTE
const START = Date.UTC(2026, 5, 1)
const TAG = 'Export Test Tag'

/** A small deterministic generator, so that a failure repeats. */
function generator (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state ^ (state >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0
    return state / 4_294_967_296
  }
}

const contractTime = (ms: number): string => new Date(ms).toISOString().replace('.000Z', 'Z')
const toArrayBuffer = (bytes: Buffer): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer

interface Row { ms: number, device: number, sensor: number, value: number | null }

t.test('export across devices', async (t) => {
  const { app, database } = await buildPlatform(t)
  const owner = await signUp(app)
  const other = await signUp(app)
  const place = async (id: number, latitude: number, longitude: number, tagged: boolean): Promise<void> => {
    await database.sql`update devices set latitude = ${latitude}, longitude = ${longitude} where id = ${id}`
    if (tagged) await database.sql`insert into device_tags (device_id, tag_id) select ${id}, id from tags where name = ${TAG}`
  }
  await database.sql`insert into tags (name, description) values (${TAG}, 'devices of the export test')`
  const barcelona = await makeDevice(database, owner.id)
  const fiji = await makeDevice(database, owner.id)
  const hidden = await makeDevice(database, owner.id, { isPrivate: true })
  const madrid = await makeDevice(database, other.id)
  const archived = await makeDevice(database, other.id)
  await place(barcelona, 41.39, 2.17, true)
  await place(fiji, -17.71, 178.06, false)
  await place(hidden, 41.4, 2.15, true)
  await place(madrid, 40.42, -3.7, true)
  await place(archived, 41.38, 2.18, true)

  // Readings over 20 days (several of the export's windows), at times the devices share and
  // times only one has, one on the first window's end, and a few without a value; one device also
  // has a reading a year earlier.
  const random = generator(23)
  for (const [device, token] of [[barcelona, owner.token], [fiji, owner.token], [hidden, owner.token], [madrid, other.token], [archived, other.token]] as const) {
    const data: { recorded_at: string, sensors: { id: number, value: number }[] }[] = []
    for (let ms = START; ms < START + 20 * DAY; ms += Math.round(random() * 3 + 1) * 17 * MINUTE) {
      const sensors = [{ id: 55, value: Math.round((random() * 60 - 20) * 100) / 100 }]
      if (random() < 0.6) sensors.push({ id: 56, value: Math.round(random() * 1000) / 10 })
      data.push({ recorded_at: new Date(ms + (random() < 0.05 ? 250 : 0)).toISOString(), sensors })
    }
    data.push({ recorded_at: new Date(START + 7 * DAY).toISOString(), sensors: [{ id: 55, value: device }] })
    // A reading a year before the rest: a range of many windows, each then empty but the first.
    if (device === fiji) data.push({ recorded_at: new Date(START - 365 * DAY).toISOString(), sensors: [{ id: 56, value: 1 }] })
    const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(token), payload: { data } })
    t.equal(posted.statusCode, 200, posted.body)
  }
  await database.sql`update readings set value = null where sensor_id = 56 and recorded_at in (select recorded_at from readings where sensor_id = 56 order by recorded_at limit 3)`
  await database.sql`update devices set archived_at = now() where id = ${archived}`

  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  t.teardown(() => { app.server.closeAllConnections() })
  const get = async (query: string, token?: string): Promise<{ res: Response, bytes: Buffer, text: string }> => {
    const res = await fetch(`${base}/v0/readings/export?${query}`, { headers: token === undefined ? {} : bearer(token) })
    const bytes = Buffer.from(await res.arrayBuffer())
    return { res, bytes, text: bytes.toString('utf8') }
  }
  /** The rows the export must hold, from the readings table, in its order. */
  const expected = async (devices: number[], where = database.sql`true`): Promise<Row[]> => {
    const rows = await database.sql<{ ms: string, device_id: number, sensor_id: number, value: number | null }[]>`
      select (extract(epoch from recorded_at) * 1000)::int8::text as ms, device_id, sensor_id, value from readings
      where device_id = any(${devices}::int4[]) and ${where} order by recorded_at, device_id, sensor_id`
    return rows.map((r) => ({ ms: Number(r.ms), device: r.device_id, sensor: r.sensor_id, value: r.value }))
  }
  const csvLine = (r: Row): string => `${contractTime(r.ms)},${r.device},${r.sensor},${r.value ?? ''}`
  const csvOf = (rows: Row[]): string => ['recorded_at,device_id,sensor_id,value', ...rows.map(csvLine)].join('\n') + '\n'

  t.test('csv and ndjson: every reading of the devices named, by time, device, sensor', async (t) => {
    const all = await expected([barcelona, fiji, madrid])
    t.ok(all.length > 3000, `${all.length} rows`)
    t.ok(all.some((r, i) => i > 0 && all[i - 1]?.ms === r.ms && all[i - 1]?.device !== r.device), 'devices share times')
    const { res, text } = await get(`device_ids=${madrid},${barcelona},${fiji}`)
    t.equal(res.status, 200)
    t.match(res.headers.get('content-type'), /^text\/csv; charset=utf-8/)
    t.equal(res.headers.get('content-disposition'), 'attachment; filename=devices_readings.csv')
    t.equal(text, csvOf(all), 'every row as stored, in order')

    const ndjson = (await get(`device_ids=${barcelona},${fiji},${madrid}&format=ndjson`)).text.trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)
    t.same(ndjson, all.map((r) => ({ recorded_at: contractTime(r.ms), device_id: r.device, sensor_id: r.sensor, value: r.value })))

    const ranged = await get(`device_ids=${barcelona},${madrid}&sensor_id=56&from=2026-06-03T00:00:00Z&to=2026-06-05T12:00:00Z`)
    t.equal(ranged.text, csvOf(await expected([barcelona, madrid], database.sql`sensor_id = 56 and recorded_at between '2026-06-03T00:00:00Z' and '2026-06-05T12:00:00Z'`)), 'a range (both ends inclusive) and a sensor')
  })

  t.test('parquet: read back value by value with a device column', async (t) => {
    const all = await expected([barcelona, fiji, madrid])
    const { res, bytes } = await get(`device_ids=${barcelona},${fiji},${madrid}&format=parquet`)
    t.equal(res.status, 200)
    t.equal(res.headers.get('content-type'), 'application/vnd.apache.parquet')
    const file = toArrayBuffer(bytes)
    const metadata = parquetMetadata(file)
    t.same(metadata.schema.slice(1).map((s) => [s.name, s.type]), [['recorded_at', 'INT64'], ['device_id', 'INT32'], ['sensor_id', 'INT32'], ['value', 'DOUBLE']])
    t.same(metadata.row_groups[0]?.sorting_columns?.map((c) => c.column_idx), [0, 1, 2], 'sorted by time, device, sensor')
    const rows = await parquetReadObjects({ file }) as { recorded_at: Date, device_id: number, sensor_id: number, value: number | null }[]
    t.same(rows.map((r) => ({ ms: r.recorded_at.getTime(), device: r.device_id, sensor: r.sensor_id, value: r.value })), all)
    t.ok(rows.some((r) => r.value === null), 'readings without a value are null')
  })

  t.test('csv_wide: a line per time and device, a column per sensor', async (t) => {
    const { text } = await get(`device_ids=${barcelona},${madrid}&format=csv_wide`)
    const lines = text.trimEnd().split('\n')
    t.equal(lines[0], 'recorded_at,device_id,Air Temperature (ºC) [55],Relative Humidity (%) [56]')
    const pivot = await database.sql<{ ms: string, device_id: number, a: number | null, b: number | null }[]>`
      select (extract(epoch from recorded_at) * 1000)::int8::text as ms, device_id, max(value) filter (where sensor_id = 55) as a, max(value) filter (where sensor_id = 56) as b
      from readings where device_id = any(${[barcelona, madrid]}::int4[]) group by recorded_at, device_id order by recorded_at, device_id`
    const cell = (v: number | null): string => v === null ? '' : String(v)
    t.same(lines.slice(1), pivot.map((p) => `${contractTime(Number(p.ms))},${p.device_id},${cell(p.a)},${cell(p.b)}`))
  })

  t.test('resumed from the last time held, at generated break points', async (t) => {
    const query = `device_ids=${barcelona},${fiji},${madrid}`
    const full = (await get(query)).text.trimEnd().split('\n')
    const random = generator(7)
    for (let k = 0; k < 12; k++) {
      // The connection broke after `held` lines; the last one may be cut short and is dropped.
      const held = full.slice(1, 2 + Math.floor(random() * (full.length - 2)))
      held.pop()
      const last = held.at(-1)?.split(',')[0]
      const resumed = last === undefined ? full.slice(1) : (await get(`${query}&from=${encodeURIComponent(last)}`)).text.trimEnd().split('\n').slice(1)
      const have = new Set(held)
      const joined = [...held, ...resumed.filter((line) => !have.has(line))]
      t.same(joined, full.slice(1), `broken after ${held.length} lines, resumed from ${last ?? 'the start'}`)
    }
  })

  t.test('by tag and by bounding box: only devices the viewer may see', async (t) => {
    const rowsOf = (text: string): Set<number> => new Set(text.trimEnd().split('\n').slice(1).map((line) => Number(line.split(',')[1])))
    const tag = encodeURIComponent(TAG)
    t.same(rowsOf((await get(`with_tags=${tag}`)).text), new Set([barcelona, madrid]), 'anonymous: the public tagged devices (not the private, not the archived)')
    t.same(rowsOf((await get(`with_tags=${tag}`, other.token)).text), new Set([barcelona, madrid]), "another user: not the owner's private device")
    t.same(rowsOf((await get(`with_tags=${tag}`, owner.token)).text), new Set([barcelona, hidden, madrid]), 'its owner: the private one too')
    t.same(rowsOf((await get(`with_tags=${tag}|Other`)).text), new Set([barcelona, madrid]), 'any of the tags')
    t.same(rowsOf((await get('bbox=2.0,41.3,2.3,41.5')).text), new Set([barcelona]), 'a box around Barcelona')
    t.same(rowsOf((await get('bbox=2.0,41.3,2.3,41.5', owner.token)).text), new Set([barcelona, hidden]))
    t.same(rowsOf((await get('bbox=170,-20,-170,-10')).text), new Set([fiji]), 'a box across the antimeridian')
    t.same(rowsOf((await get(`bbox=-10,35,5,45&with_tags=${tag}&device_ids=${madrid},${fiji}`)).text), new Set([madrid]), 'every selector applies')
    t.equal((await get('bbox=-40,-40,-30,-30')).text, 'recorded_at,device_id,sensor_id,value\n', 'no device in the box: the header alone')
    const empty = await get('bbox=-40,-40,-30,-30&format=parquet')
    t.equal(Number(parquetMetadata(toArrayBuffer(empty.bytes)).num_rows), 0, 'an empty Parquet file is valid')

    for (const headers of [undefined, other.token]) {
      const refused = await app.inject({ url: `/v0/readings/export?device_ids=${barcelona},${hidden}`, headers: headers === undefined ? {} : bearer(headers) })
      const missing = await app.inject({ url: `/v0/readings/export?device_ids=${barcelona},999999`, headers: headers === undefined ? {} : bearer(headers) })
      t.same([refused.statusCode, refused.body], [404, missing.body.replaceAll('999999', String(hidden))], 'a private device named by id is answered as a missing one')
    }
    t.equal((await app.inject({ url: `/v0/readings/export?device_ids=${archived}` })).statusCode, 404, 'an archived device is missing')
  })

  t.test('bad selections are a 400 in the one error shape', async (t) => {
    const cases: Array<[string, RegExp]> = [
      ['', /device_ids, with_tags or bbox/],
      ['format=csv', /device_ids, with_tags or bbox/],
      ['device_ids=1,x', /device_ids/],
      [`device_ids=${Array.from({ length: MAX_EXPORT_DEVICE_IDS + 1 }, (_, i) => i + 1).join(',')}`, /device_ids/],
      ['bbox=1,2,3', /bbox/],
      ['bbox=1,50,3,40', /south/],
      ['bbox=190,10,20,30', /bbox/],
      [`device_ids=${barcelona}&from=2026-06-05&to=2026-06-01`, /from/],
      [`device_ids=${barcelona}&format=xlsx`, /format/]
    ]
    for (const [query, message] of cases) {
      const res = await app.inject({ url: `/v0/readings/export?${query}` })
      t.equal(res.statusCode, 400, query.slice(0, 60))
      const body = errorBody(res)
      t.match(body, { id: 'bad_request', message: String, errors: Object, url: null }, query.slice(0, 60))
      t.match(JSON.stringify([body.message, body.errors]), message, 'the message or the errors name what is wrong')
    }
  })
})
