import { fillDayOffsetsOf } from '@esp/db'
import type { BenchPlatform } from './setup.js'
import { percentile, progress, round, timeRuns } from './stats.js'
import { ensureWrk, wrk, type WrkResult } from './wrk.js'

/** What a route's wrk run gave, and who asked. */
export interface RouteLoad {
  url: string
  /** anonymous, as most callers are; the admin (unthrottled) only if the rate limit refused the anonymous load */
  caller: 'anonymous' | 'admin'
  requests: number
  requestsPerSecond: number
  p50: number
  p90: number
  p99: number
  /** bytes of one answer (uncompressed, as wrk asks) */
  bytes: number
}

export interface AreaFigures {
  devices: number
  days: number
  /** the one sensor of every device, and its measurement (what the routes ask for) */
  sensorId: number
  measurementId: number
  /** west, south, east, north */
  bbox: [number, number, number, number]
  from: string
  to: string
  /** raw readings loaded (devices × days × 1440) */
  rows: number
  /** the load in SQL (raw rows, hourly and daily tiers, components, latest values), then vacuum analyze and checkpoint */
  load: { seconds: number, rowsPerSecond: number, settleSeconds: number, bytes: number, bytesPerRow: number }
  /** wrk's connections and seconds per route */
  connections: number
  seconds: number
  /** the same statistics in SQL over the raw rows (per device hourly avg, then across devices), ms */
  raw: { runs: number[], p50: number }
  statistics: RouteLoad & {
    windows: number
    /** the answer against the raw SQL over every window: the largest relative difference of each figure */
    maxRelativeDifference: Record<string, number>
    /** raw SQL p50 / route p50: target >= 20 */
    ratioRawToRoute: number
    /** the first request, before the process keeps any closed day (every hour read from the tier), ms */
    coldMs: number
    ratioRawToCold: number
  }
  interpolation: RouteLoad & {
    cellSizeKm: number
    features: number
    /** time steps of the grid (one: the day) */
    steps: number
    /** route p50 / GET /health/live p50 */
    ratioToBaseline: number
  }
  /** GET /health/live with wrk in the same run: the platform's cheapest route */
  health: { p50: number, requestsPerSecond: number }
}

const MINUTE = 60_000
const DAY = 1440 * MINUTE
/** Barcelona, a city-sized box: west, south, east, north. */
const BBOX: [number, number, number, number] = [2.05, 41.32, 2.23, 41.47]
/** Plantower PMS5003 - PM2.5 of the seeded catalogue (kit 26's PM 2.5), measurement 14 (PM 2.5). */
const SENSOR = 87
const MEASUREMENT = 14
/** The 30 days before 2026-11-01 (as the rollups case): all in October's partition. */
const END = Date.UTC(2026, 10, 1)
/** Devices loaded at once (one statement each): the machine's two cores. */
const LOAD_WORKERS = 2
const EARTH_KM = 6371.0088

/** The statistics as issue 38 defines them, in SQL over the raw rows: the route's result computed the slow way. */
const RAW_STATISTICS = `
  with selected as (
    select c.device_id, c.sensor_id from devices d
    join components c on c.device_id = d.id
    join sensors s on s.id = c.sensor_id and s.measurement_id = $1
    where not d.is_private and d.archived_at is null
      and d.longitude between $2 and $4 and d.latitude between $3 and $5
  ), hourly as (
    select r.device_id, date_bin('1 hour', r.recorded_at, timestamptz '2000-01-01T00:00:00Z') as bucket, avg(r.value) as v
    from readings r join selected using (device_id, sensor_id)
    where r.recorded_at >= $6 and r.recorded_at < $7 and r.value is not null
    group by 1, 2
  )
  select (extract(epoch from bucket) * 1000)::float8 as at, devices, mean, sd, min, max, median, percentiles[1] as p10, percentiles[2] as p90 from (
    select bucket, count(*)::int as devices, avg(v) as mean, stddev_samp(v) as sd, min(v) as min, max(v) as max,
      percentile_cont(0.5) within group (order by v) as median,
      percentile_cont(array[0.1, 0.9]::float8[]) within group (order by v) as percentiles
    from hourly group by bucket
  ) w order by bucket desc`

interface RawWindow { at: number, devices: number, mean: number, sd: number | null, min: number, max: number, median: number, p10: number, p90: number }
interface StatisticsWindow { time: string, devices: number, mean: number, sd: number | null, min: number, max: number, median: number, percentiles: number[] }

/**
 * One device's month: its raw rows (value = raw_value, a deterministic signal: a base by device, a
 * daily and a weekly sine, noise from a hash of device and minute, two decimals as sensors report),
 * and, from the rows the statement inserted, the hourly tier (count, mean, M2 = var_pop × count,
 * sum, extremes, first and last) and the daily tier merged from those hours as the write path
 * merges states (Chan: esp_chan). Buckets on UTC hours and days, as the write path's.
 */
const LOAD_DEVICE = `
  with raw as (
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select $1::int, $2::int, $3::timestamptz + g.i * interval '1 minute', g.v, g.v
    from (
      select i, round((12 + ($4::int % 17) * 0.5 + 6 * sin(2 * pi() * (i % 1440) / 1440) + 2 * sin(2 * pi() * i / 10080)
               + (($4::bigint * 7919 + i * 104729) % 1009) / 1009.0 - 0.5) * 100) / 100 as v
      from generate_series(0::bigint, $5::bigint - 1) as i
    ) g
    returning device_id, sensor_id, recorded_at, value
  ), hourly as (
    insert into readings_hourly (device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
    select device_id, sensor_id, bucket, n, mean, m2, sum, min, max, first_at, vs[1], last_at, vs[cardinality(vs)]
    from (
      select device_id, sensor_id, date_bin('1 hour', recorded_at, timestamptz '2000-01-01T00:00:00Z') as bucket,
        count(value) as n, avg(value) as mean, coalesce(var_pop(value) * count(value), 0) as m2, sum(value) as sum, min(value) as min, max(value) as max,
        min(recorded_at) as first_at, max(recorded_at) as last_at, array_agg(value order by recorded_at) as vs
      from raw group by 1, 2, 3
    ) h
    order by 1, 2, 3
    returning *
  )
  insert into readings_daily (device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
  select device_id, sensor_id, date_bin('1 day', bucket, timestamptz '2000-01-01T00:00:00Z'), sum(count)::bigint,
    (esp_chan(count::float8, mean, m2))[2], (esp_chan(count::float8, mean, m2))[3], sum(sum), min(min), max(max),
    min(first_at), (array_agg(first_val order by first_at))[1], max(last_at), (array_agg(last_val order by last_at desc))[1]
  from hourly group by 1, 2, 3 order by 1, 2, 3`

/** Latest and previous value of each device, as the write path's latest_readings statement leaves them. */
const LOAD_LATEST = `
  insert into latest_readings as l (device_id, sensor_id, recorded_at, value, raw_value, prev_recorded_at, prev_value, prev_raw_value)
  select device_id, sensor_id, recorded_at, value, raw_value, prev_at, prev_value, prev_raw_value from (
    select device_id, sensor_id, recorded_at, value, raw_value,
      lag(recorded_at) over w as prev_at, lag(value) over w as prev_value, lag(raw_value) over w as prev_raw_value,
      row_number() over (partition by device_id, sensor_id order by recorded_at desc) as n
    from readings
    where device_id = any($1::int[]) and sensor_id = $2 and recorded_at >= $3::timestamptz - interval '2 minutes' and recorded_at < $3::timestamptz
    window w as (partition by device_id, sensor_id order by recorded_at)
  ) r where n = 1
  on conflict (device_id, sensor_id) do update set
    prev_recorded_at = l.recorded_at, prev_value = l.value, prev_raw_value = l.raw_value,
    recorded_at = excluded.recorded_at, value = excluded.value, raw_value = excluded.raw_value, added_at = now()
  where excluded.recorded_at > l.recorded_at`

/** Relative difference, 0 when both are equal (nulls included). */
function relative (a: number | null | undefined, b: number | null | undefined): number {
  if (a === b) return 0
  if (a === null || a === undefined || b === null || b === undefined) return Number.POSITIVE_INFINITY
  return Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b), Number.MIN_VALUE)
}

/** A GET that must answer 200: its body, or an error naming the status and what it said. */
async function get200 (url: string, headers: Record<string, string>, what: string): Promise<{ body: string, caller: 'anonymous' | 'admin' }> {
  const res = await fetch(url, { headers })
  const body = await res.text()
  if (res.status !== 200) throw new Error(`area: ${what} answered ${res.status}, not 200 (GET ${url}): ${body.slice(0, 500)}`)
  return { body, caller: 'authorization' in headers ? 'admin' : 'anonymous' }
}

/**
 * `count` public outdoor devices spread over BBOX (an R2 low-discrepancy sequence: no two at one
 * place), each with one SENSOR and `days` of one-minute readings up to END, loaded in SQL as the
 * write path would have stored them: components first (ensureComponents), then per device its raw
 * rows and their hourly and daily tiers in one statement (LOAD_WORKERS at once), the wall clocks'
 * daily tiers, latest values and the devices' last_reading_at and state; then settled as
 * writeReadings (setup.ts) settles a load: vacuum analyze (statistics, visibility map) and a
 * checkpoint. Native engine only.
 */
export async function seedArea (p: BenchPlatform, count: number, days: number, every = 100): Promise<{ devices: number[], seconds: number, settleSeconds: number, bytes: number }> {
  const sql = p.database.sql
  const minutes = days * 1440
  const rows = count * minutes
  const from = new Date(END - days * DAY).toISOString()
  const to = new Date(END).toISOString()
  const [engine] = await sql<{ value: string }[]>`select value from esp_settings where key = 'ts_engine'`
  if (engine?.value !== 'native') throw new Error(`area: the case loads the native engine's tables in SQL; this database runs the ${engine?.value ?? 'unknown'} engine`)
  const [west, south, east, north] = BBOX
  const devices = (await sql<{ id: number }[]>`
    insert into devices (owner_id, name, description, kit_id, latitude, longitude, exposure, state, city, country_code)
    select ${p.userId}, 'area ' || g, 'a bench device', 26,
      ${south} + ${north - south} * ((0.5 + g * 0.7548776662466927) % 1), ${west} + ${east - west} * ((0.5 + g * 0.5698402909980532) % 1),
      'outdoor', 'never_published', 'Barcelona', 'ES'
    from generate_series(0, ${count - 1}) g order by g returning id`).map((r) => r.id)

  const databaseBytes = async (): Promise<number> => Number((await sql`select pg_database_size(current_database())::bigint as n`)[0]?.n)
  const bytesBefore = await databaseBytes()
  progress(`area: loading ${count} devices × ${days} days of one-minute readings (${rows.toLocaleString('en-US')} rows) in SQL, with their hourly and daily tiers`)
  const t0 = performance.now()
  await sql`select esp_ensure_reading_partitions(${from}::timestamptz, ${to}::timestamptz)`
  await sql`insert into components (device_id, sensor_id) select unnest(${devices}::int[]), ${SENSOR} order by 1 on conflict (device_id, sensor_id) do nothing`
  let next = 0
  let done = 0
  const worker = async (): Promise<void> => {
    while (next < devices.length) {
      const k = next++
      await sql.unsafe(LOAD_DEVICE, [devices[k] ?? 0, SENSOR, from, k, minutes])
      if (++done % every === 0) progress(`area: ${done} of ${count} devices loaded (${Math.round(done * minutes / ((performance.now() - t0) / 1000)).toLocaleString('en-US')} rows/s)`)
    }
  }
  await Promise.all(Array.from({ length: LOAD_WORKERS }, worker))
  await fillDayOffsetsOf(sql, devices)
  await sql.unsafe(LOAD_LATEST, [devices, SENSOR, to])
  await sql`
    update devices d set last_reading_at = greatest(d.last_reading_at, ${new Date(END - MINUTE).toISOString()}::timestamptz),
      state = case when d.state = 'archived' then d.state else 'has_published' end
    where d.id = any(${devices}::int[])`
  const seconds = (performance.now() - t0) / 1000
  const t1 = performance.now()
  await sql.unsafe('vacuum analyze readings, readings_hourly, readings_daily, readings_daily_offset, devices, components, latest_readings')
  await sql`checkpoint`
  const settleSeconds = (performance.now() - t1) / 1000
  const bytes = await databaseBytes() - bytesBefore
  progress(`area: loaded in ${round(seconds, 1)} s (${Math.round(rows / seconds).toLocaleString('en-US')} rows/s), settled in ${round(settleSeconds, 1)} s; ${round(bytes / 2 ** 20)} MB added to the database (${round(bytes / rows)} bytes a row)`)
  return { devices, seconds, settleSeconds, bytes }
}

/**
 * Case `area` (issue 38): 1,000 public outdoor devices spread over Barcelona, each with one PM 2.5
 * sensor and a month of one-minute readings (43.2 million), loaded in SQL as the write path would
 * store them. Timed: the area statistics route over the month at 1h (720 windows) against the
 * same statistics in SQL over the raw rows; the IDW grid of a day at 100 cells across the box
 * against GET /health/live; each route with wrk, one connection.
 */
export async function benchArea (p: BenchPlatform, quick: boolean): Promise<AreaFigures> {
  const count = quick ? 50 : 1000
  const days = quick ? 2 : 30
  const seconds = quick ? 3 : 10
  const rows = count * days * 1440
  const from = new Date(END - days * DAY).toISOString()
  const to = new Date(END).toISOString()
  const sql = p.database.sql
  await ensureWrk()
  const [west, south, east, north] = BBOX
  const { seconds: loadSeconds, settleSeconds, bytes } = await seedArea(p, count, days, quick ? 25 : 100)

  // Baseline: the statistics in SQL over raw rows.
  let raw: RawWindow[] = []
  const rawTimes = await timeRuns(quick ? 1 : 3, 0, async () => {
    raw = await sql.unsafe<RawWindow[]>(RAW_STATISTICS, [MEASUREMENT, west, south, east, north, from, to])
  })
  const rawP50 = percentile(rawTimes, 50)
  progress(`area: the statistics in SQL over raw rows: ${rawTimes.map((t) => round(t)).join(', ')} ms (p50 ${round(rawP50)} ms), ${raw.length} windows`)
  if (raw.length !== days * 24 || raw.some((w) => w.devices !== count)) throw new Error(`area: the raw SQL found ${raw.length} windows (${days * 24} expected) of ${[...new Set(raw.map((w) => w.devices))].join(', ')} devices (${count} expected)`)

  const health = await wrk(`${p.base}/health/live`, { connections: 1, seconds })
  progress(`area: GET /health/live p50 ${round(health.p50, 3)} ms`)

  const admin = { authorization: `Bearer ${p.token}` }
  /**
   * wrk, one connection. Anonymous, under the bench's configured rate limit (setup.ts) as the reads
   * case; if the route's weighted charge still exceeds it (429), the admin's token, unthrottled, as
   * the cost case's caller.
   */
  const load = async (url: string, caller: 'anonymous' | 'admin', bytes: number, what: string): Promise<RouteLoad> => {
    let result: WrkResult
    try {
      result = await wrk(url, { connections: 1, seconds, headers: caller === 'admin' ? admin : {} })
    } catch (error) {
      const status = (await fetch(url, { headers: caller === 'admin' ? admin : {} })).status
      if (status !== 429 || caller === 'admin') throw new Error(`area: ${what} failed under wrk (it answers ${status} now): ${error instanceof Error ? error.message : String(error)}`)
      progress(`area: ${what}: 429 for the anonymous load (the route's rate-limit charge exceeds the bench's limit); timed as the admin, unthrottled`)
      caller = 'admin'
      result = await wrk(url, { connections: 1, seconds, headers: admin })
    }
    return { url: url.slice(p.base.length), caller, requests: result.requests, requestsPerSecond: round(result.requestsPerSecond, 1), p50: round(result.p50), p90: round(result.p90), p99: round(result.p99), bytes }
  }
  const firstCaller = async (url: string, what: string): Promise<{ body: string, caller: 'anonymous' | 'admin' }> => {
    const res = await fetch(url)
    if (res.status === 429) { await res.arrayBuffer(); return await get200(url, admin, what) }
    const body = await res.text()
    if (res.status !== 200) throw new Error(`area: ${what} answered ${res.status}, not 200 (GET ${url}): ${body.slice(0, 500)}`)
    return { body, caller: 'anonymous' }
  }

  // The statistics route: checked against the raw SQL first (the bench must time the right thing).
  const box = BBOX.join(',')
  const statisticsUrl = `${p.base}/v0/readings/statistics?measurement_id=${MEASUREMENT}&bbox=${box}&rollup=1h&from=${from}&to=${to}&percentiles=10,90`
  // The first request reads every hour from the tier; the process then keeps the closed days.
  const coldStart = performance.now()
  const first = await firstCaller(statisticsUrl, 'GET /v0/readings/statistics')
  const coldMs = performance.now() - coldStart
  progress(`area: the first GET /v0/readings/statistics (no closed day kept yet) took ${round(coldMs)} ms`)
  const answer = JSON.parse(first.body) as { devices: number, windows: StatisticsWindow[] }
  if (answer.windows.length !== days * 24 || answer.devices !== count) throw new Error(`area: GET /v0/readings/statistics answered ${answer.windows.length} windows of ${answer.devices} devices, not ${days * 24} of ${count}`)
  const byTime = new Map(answer.windows.map((w) => [new Date(w.time).getTime(), w]))
  const differences: Record<string, number> = { devices: 0, mean: 0, sd: 0, min: 0, max: 0, median: 0, p10: 0, p90: 0 }
  for (const r of raw) {
    const w = byTime.get(r.at)
    if (w === undefined) throw new Error(`area: GET /v0/readings/statistics has no window at ${new Date(r.at).toISOString()}, which the raw SQL has (the route's first window: ${answer.windows[0]?.time ?? 'none'})`)
    const pairs: Record<string, [number | null | undefined, number | null | undefined]> = {
      devices: [w.devices, r.devices], mean: [w.mean, r.mean], sd: [w.sd, r.sd], min: [w.min, r.min], max: [w.max, r.max], median: [w.median, r.median], p10: [w.percentiles?.[0], r.p10], p90: [w.percentiles?.[1], r.p90]
    }
    for (const [key, [a, b]] of Object.entries(pairs)) differences[key] = Math.max(differences[key] ?? 0, relative(a, b))
  }
  const middle = raw[Math.floor(raw.length / 2)] as RawWindow
  const middleMedian = byTime.get(middle.at)?.median
  if (relative(middleMedian, middle.median) > 1e-9) throw new Error(`area: the route's median at ${new Date(middle.at).toISOString()} is ${String(middleMedian)}, the raw SQL's ${middle.median}`)
  progress(`area: the statistics route agrees with the raw SQL (largest relative differences: ${Object.entries(differences).map(([k, v]) => `${k} ${v.toExponential(1)}`).join(', ')})`)
  const statisticsLoad = await load(statisticsUrl, first.caller, Buffer.byteLength(first.body), 'GET /v0/readings/statistics')
  progress(`area: GET /v0/readings/statistics p50 ${statisticsLoad.p50} ms (${statisticsLoad.requests} requests), raw SQL / route ${round(rawP50 / statisticsLoad.p50, 1)}`)

  // The IDW grid of the last day, 100 cells across the box at its middle latitude.
  const midLatitude = (south + north) / 2 * Math.PI / 180
  const cellSizeKm = EARTH_KM * (east - west) * Math.PI / 180 * Math.cos(midLatitude) / 100
  // `to` is inclusive: the day's last second, so that the grid has the one step of that day.
  const interpolationUrl = `${p.base}/v0/readings/interpolation?measurement_id=${MEASUREMENT}&bbox=${box}&from=${new Date(END - DAY).toISOString()}&to=${new Date(END - 1000).toISOString()}&cell_size=${round(cellSizeKm, 6)}`
  const grid = await firstCaller(interpolationUrl, 'GET /v0/readings/interpolation')
  const gridAnswer = JSON.parse(grid.body) as { features?: unknown[], steps?: unknown[] }
  const features = gridAnswer.features?.length ?? 0
  const steps = gridAnswer.steps?.length ?? 0
  progress(`area: the IDW grid of ${round(cellSizeKm, 4)} km cells has ${features} features and ${steps} step${steps === 1 ? '' : 's'}`)
  const interpolationLoad = await load(interpolationUrl, grid.caller, Buffer.byteLength(grid.body), 'GET /v0/readings/interpolation')
  progress(`area: GET /v0/readings/interpolation p50 ${interpolationLoad.p50} ms (${interpolationLoad.requests} requests)`)

  return {
    devices: count,
    days,
    sensorId: SENSOR,
    measurementId: MEASUREMENT,
    bbox: BBOX,
    from,
    to,
    rows,
    load: { seconds: round(loadSeconds, 1), rowsPerSecond: Math.round(rows / loadSeconds), settleSeconds: round(settleSeconds, 1), bytes, bytesPerRow: round(bytes / rows) },
    connections: 1,
    seconds,
    raw: { runs: rawTimes.map((t) => round(t)), p50: round(rawP50) },
    statistics: { ...statisticsLoad, windows: answer.windows.length, maxRelativeDifference: differences, ratioRawToRoute: round(rawP50 / statisticsLoad.p50, 1), coldMs: round(coldMs), ratioRawToCold: round(rawP50 / coldMs, 1) },
    interpolation: { ...interpolationLoad, cellSizeKm: round(cellSizeKm, 6), features, steps, ratioToBaseline: round(interpolationLoad.p50 / health.p50, 1) },
    health: { p50: round(health.p50, 3), requestsPerSecond: Math.round(health.requestsPerSecond) }
  }
}
