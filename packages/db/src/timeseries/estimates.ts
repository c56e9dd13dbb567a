import { pgDateOrNull, type Runner } from './engine.js'

/*
 * What a readings request will find, known before it reads it (issue 35): the most buckets that can
 * hold data, from the hourly tier's counts, and where the n-th reading of a range lies. Both are
 * bounded statements: the first reads one tier row an hour of data, the second at most
 * MAX_NTH_READING index entries.
 */

/**
 * The most readings the n-th reading's statement steps over (an index-only scan: about 10 ms of
 * PostgreSQL's time at this bound, for each sensor of a request), and so the largest `limit` a
 * readings request takes. A million cost a tenth of a second a sensor, which took the signed-in
 * caller's p99 under the bounded-cost bench's attack past its target.
 */
export const MAX_NTH_READING = 100_000

const DAY_MS = 86_400_000

/**
 * An upper bound of the buckets holding data in [from, until), per UTC day: (day start in epoch ms,
 * bound) pairs in time order, a day only where the hourly tier has rows. Each hourly row of count c
 * that meets the range contributes min(c, perHour), perHour being the most buckets of the rollup
 * an hour can meet (one statement over the tier rows of the range; a day is 16 bytes here).
 */
export async function bucketsPerDay (runner: Runner, q: { deviceId: number, sensorId: number, from: Date, until: Date, perHour: number }): Promise<Float64Array> {
  if (!(q.perHour > 0)) throw new Error(`not a bound of buckets an hour: ${q.perHour}`)
  const [row] = await runner.query<{ days: Uint8Array | null }>(`
    select string_agg(float8send((extract(epoch from d.day) * 1000)::float8) || float8send(d.n), ''::bytea order by d.day) as days
    from (
      select date_bin('1 day', bucket, timestamptz '1970-01-01T00:00:00Z') as day, sum(least(count::float8, $5::float8))::float8 as n
      from readings_hourly
      where device_id = $1 and sensor_id = $2 and bucket > $3::timestamptz - interval '1 hour' and bucket < $4::timestamptz
      group by 1
    ) as d`, [q.deviceId, q.sensorId, q.from, q.until, q.perHour])
  const bytes = row?.days
  if (bytes === null || bytes === undefined) return new Float64Array(0)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const days = new Float64Array(Math.floor(bytes.byteLength / 8))
  for (let i = 0; i < days.length; i++) days[i] = view.getFloat64(8 * i)
  // The day starts come from whole epoch days: exact in a float8, and so in ms.
  for (let i = 0; i < days.length; i += 2) days[i] = Math.round((days[i] as number) / DAY_MS) * DAY_MS
  return days
}

/**
 * The time of the n-th reading (1 for the first) of [from, until), counted from the oldest, or with
 * `newest` from the newest; null when the range holds fewer. Every stored row counts, a null value
 * too. One indexed statement, which steps over at most n - 1 ≤ MAX_NTH_READING entries.
 */
export async function nthReadingTime (runner: Runner, q: { deviceId: number, sensorId: number, from: Date, until: Date, n: number, newest?: boolean }): Promise<Date | null> {
  if (!Number.isSafeInteger(q.n) || q.n < 1 || q.n > MAX_NTH_READING) throw new Error(`the n-th reading is looked up for n from 1 to ${MAX_NTH_READING}, not ${q.n}`)
  const [row] = await runner.query<{ at: unknown }>(`
    select recorded_at as at from readings
    where device_id = $1 and sensor_id = $2 and recorded_at >= $3::timestamptz and recorded_at < $4::timestamptz
    order by recorded_at ${q.newest === true ? 'desc' : 'asc'}
    offset $5::bigint limit 1`, [q.deviceId, q.sensorId, q.from, q.until, q.n - 1])
  return pgDateOrNull(row?.at)
}
