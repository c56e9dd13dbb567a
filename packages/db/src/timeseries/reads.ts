import { pgDate, pgDateOrNull, type Runner, type Tier } from './engine.js'

/**
 * Per-bucket mergeable state as the query layer reads it from raw rows or a tier. Times are epoch
 * milliseconds: numbers cost nothing to read, where timestamps would be parsed row by row. A part
 * the asked function does not need is not read at all (undefined).
 */
export interface StateRow {
  bucket: number
  count: number
  mean?: number
  m2?: number
  sum?: number
  min?: number
  max?: number
  first_at?: number | null
  first_val?: number | null
  last_at?: number | null
  last_val?: number | null
}

export interface StateQuery {
  deviceId: number
  sensorId: number
  from: Date
  /** exclusive */
  until: Date
}

/** The SQL of each part of a state, for one source (a tier's stored columns or raw aggregates). */
interface StateSql { count: string, meanM2: string, sum: string, min: string, max: string, first: string, last: string }

/**
 * The select list of a state with only what `fn` needs (every part, when none is given). Both
 * readers serve hot paths, a year of daily rows or tens of thousands of raw rows a request, and
 * every column is parsed once per row.
 */
function stateColumns (fn: string | undefined, sql: StateSql): string {
  const need = (...fns: string[]): boolean => fn === undefined || fns.includes(fn)
  return [
    `${sql.count} as count`,
    need('dev') ? sql.meanM2 : null,
    need('avg', 'sum') ? `${sql.sum} as sum` : null,
    need('min') ? `${sql.min} as min` : null,
    need('max') ? `${sql.max} as max` : null,
    need('first') ? sql.first : null,
    need('last') ? sql.last : null
  ].filter((column) => column !== null).join(', ')
}

const TIER_SQL: StateSql = {
  count: 'count::float8',
  meanM2: 'mean, m2',
  sum: 'sum',
  min: 'min',
  max: 'max',
  first: '(extract(epoch from first_at) * 1000)::float8 as first_at, first_val',
  last: '(extract(epoch from last_at) * 1000)::float8 as last_at, last_val'
}

/** var_pop is PostgreSQL's numerically stable (Youngs-Cramer) variance. */
const RAW_SQL: StateSql = {
  count: 'count(value)::float8',
  meanM2: 'avg(value) as mean, coalesce(var_pop(value) * count(value), 0) as m2',
  sum: 'sum(value)',
  min: 'min(value)',
  max: 'max(value)',
  first: '(extract(epoch from min(recorded_at)) * 1000)::float8 as first_at, (array_agg(value order by recorded_at))[1] as first_val',
  last: '(extract(epoch from max(recorded_at)) * 1000)::float8 as last_at, (array_agg(value order by recorded_at desc))[1] as last_val'
}

/**
 * Stored tier rows in [from, until): the planner only asks for tier-aligned ranges. Ordered by the
 * stored bucket (the key's order, no sort), not by the epoch number the select list calls bucket.
 */
export async function tierStates (runner: Runner, tier: Tier, q: StateQuery & { fn?: string }): Promise<StateRow[]> {
  return await runner.query<StateRow>(`
    select (extract(epoch from tier.bucket) * 1000)::float8 as bucket, ${stateColumns(q.fn, TIER_SQL)}
    from ${tier.table} as tier
    where device_id = $1 and sensor_id = $2 and tier.bucket >= $3 and tier.bucket < $4
    order by tier.bucket`, [q.deviceId, q.sensorId, q.from, q.until])
}

/** States computed from raw rows, grouped by `date_bin(interval, recorded_at, origin)`, in bucket order. */
export async function rawStates (runner: Runner, q: StateQuery & { interval: string, origin: string, fn: string }): Promise<StateRow[]> {
  // Grouped by the timestamp itself; only the result rows become epoch numbers (extract() is
  // numeric arithmetic, far too slow to run once per raw row).
  return await runner.query<StateRow>(`
    select (extract(epoch from s.bucket_at) * 1000)::float8 as bucket, s.* from (
      select date_bin($5::interval, recorded_at, $6::timestamptz) as bucket_at, ${stateColumns(q.fn, RAW_SQL)}
      from readings
      where device_id = $1 and sensor_id = $2 and recorded_at >= $3 and recorded_at < $4
      group by 1
    ) as s
    order by s.bucket_at`, [q.deviceId, q.sensorId, q.from, q.until, q.interval, q.origin])
}

/** Raw points for the raw rollup (each reading its own bucket), at most `limit`. */
export async function rawPoints (runner: Runner, q: StateQuery & { limit: number }): Promise<{ recorded_at: Date, value: number }[]> {
  const rows = await runner.query<{ recorded_at: unknown, value: number }>(`
    select recorded_at, value from readings
    where device_id = $1 and sensor_id = $2 and recorded_at >= $3 and recorded_at < $4
    order by recorded_at desc limit $5`, [q.deviceId, q.sensorId, q.from, q.until, q.limit])
  return rows.map((r) => ({ recorded_at: pgDate(r.recorded_at), value: r.value }))
}

/** First and last reading time of a device's sensor: the span a request is clamped to. */
export async function readingSpan (runner: Runner, deviceId: number, sensorId: number): Promise<{ first: Date | null, last: Date | null }> {
  const [row] = await runner.query<{ first: unknown, last: unknown }>(`
    select (select min(recorded_at) from readings where device_id = $1 and sensor_id = $2) as first,
           (select max(recorded_at) from readings where device_id = $1 and sensor_id = $2) as last`, [deviceId, sensorId])
  return { first: pgDateOrNull(row?.first), last: pgDateOrNull(row?.last) }
}
