import type { Sql } from '../client.js'
import { engineName, postgresRunner, type Runner, type Statement, type Tier } from './engine.js'

/*
 * Daily tiers shifted off UTC midnight (migration 0007): the days of a zone whose offset is k whole
 * hours are the days that start k hours before UTC midnight, one row each, for every day the zone
 * keeps that offset from midnight to midnight. Native engine only.
 */

const DAY_MS = 86_400_000
const HOUR_MS = 3_600_000
const MINUTE_MS = 60_000

/** The shifted daily tier of an offset (ms to add to UTC to read the wall clock). */
export const dayOffsetTier = (offsetMs: number): Tier => ({ name: 'daily', table: 'readings_daily_offset', ms: DAY_MS, offsetMinutes: offsetMs / MINUTE_MS })

/** Offsets that can have a shifted daily tier: whole hours, within a day; at 0 the UTC daily tier serves. */
export const isTierableOffset = (offsetMs: number): boolean => offsetMs !== 0 && offsetMs % HOUR_MS === 0 && Math.abs(offsetMs) <= DAY_MS

/**
 * The write transaction's statement for the shifted tiers: the batch's hourly states (the hourly
 * tier's own statement parameters) merged per shifted day for every registered offset. The
 * registry is read inside the statement, in the write's transaction, which is what makes a
 * registration exact (see registerDayOffsets). An hour lies in one shifted day: whole-hour offsets.
 * Rows are merged in key order, as the other tiers', so concurrent writes cannot deadlock.
 */
export function dayOffsetsUpsert (hourlyParams: unknown[]): Statement {
  return {
    text: `
    insert into readings_daily_offset as t (offset_minutes, device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
    with h as (
      select o.offset_minutes, b.*, date_bin('1 day', b.bucket, timestamptz '2000-01-01T00:00:00Z' - o.offset_minutes * interval '1 minute') as day
      from unnest($1::int[], $2::int[], $3::timestamptz[], $4::bigint[], $5::float8[], $6::float8[], $7::float8[],
                  $8::float8[], $9::float8[], $10::timestamptz[], $11::float8[], $12::timestamptz[], $13::float8[])
        as b(device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
      cross join readings_day_offsets o
    )
    ${MERGED_DAYS}
    on conflict (offset_minutes, device_id, sensor_id, bucket) do update set ${MERGE_INTO_STORED}`,
    params: hourlyParams
  }
}

/**
 * Hourly states `h` (offset_minutes, day, and a tier row's columns) merged per shifted day, in key
 * order: counts and sums added, extremes of the extremes, first of the firsts, and Chan's formula
 * for M2 (each hour's M2 plus its squared distance to the day's mean).
 */
const MERGED_DAYS = `
    , m as (select offset_minutes, device_id, sensor_id, day, sum(count * mean) / sum(count) as day_mean from h group by 1, 2, 3, 4)
    select h.offset_minutes, h.device_id, h.sensor_id, h.day, sum(h.count)::bigint, m.day_mean,
      sum(h.m2 + h.count * (h.mean - m.day_mean) * (h.mean - m.day_mean)), sum(h.sum), min(h.min), max(h.max),
      min(h.first_at), (array_agg(h.first_val order by h.first_at))[1], max(h.last_at), (array_agg(h.last_val order by h.last_at desc))[1]
    from h join m using (offset_minutes, device_id, sensor_id, day)
    group by h.offset_minutes, h.device_id, h.sensor_id, h.day, m.day_mean
    order by 2, 3, 1, 4`

/**
 * Fills every registered shifted daily tier for these devices from their hourly rows, as the
 * write path would have merged them: for loads that bypass the write path (the benchmarks' data
 * written in SQL), never beside writes to the same devices.
 */
export async function fillDayOffsetsOf (sql: Sql, deviceIds: readonly number[]): Promise<void> {
  await sql.unsafe(`
    insert into readings_daily_offset (offset_minutes, device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
    with h as (
      select o.offset_minutes, r.*, date_bin('1 day', r.bucket, timestamptz '2000-01-01T00:00:00Z' - o.offset_minutes * interval '1 minute') as day
      from readings_hourly r cross join readings_day_offsets o
      where r.device_id = any($1::int[])
    )
    ${MERGED_DAYS}`, [deviceIds as number[]])
}

/** The native tiers' merge of a new state (excluded) into a stored one (t): every right-hand side reads the old row. */
export const MERGE_INTO_STORED = `
      count = t.count + excluded.count,
      mean = t.mean + (excluded.mean - t.mean) * excluded.count / (t.count + excluded.count),
      m2 = t.m2 + excluded.m2 + (excluded.mean - t.mean) * (excluded.mean - t.mean) * t.count * excluded.count / (t.count + excluded.count),
      sum = t.sum + excluded.sum,
      min = least(t.min, excluded.min),
      max = greatest(t.max, excluded.max),
      first_val = case when excluded.first_at < t.first_at then excluded.first_val else t.first_val end,
      first_at = least(t.first_at, excluded.first_at),
      last_val = case when excluded.last_at > t.last_at then excluded.last_val else t.last_val end,
      last_at = greatest(t.last_at, excluded.last_at)`

/** Registered offsets per runner, re-read after a while: a registration is seen within REFRESH_MS. */
const REFRESH_MS = 30_000
const known = new WeakMap<Runner, { at: number, tiers: Promise<Map<number, Tier>> }>()

/**
 * The shifted daily tiers that exist, by offset in ms. One that is not seen yet only means the
 * hourly tier serves those days a little longer: a registered tier is complete from the start.
 */
export async function dayOffsetTiers (runner: Runner): Promise<Map<number, Tier>> {
  const cached = known.get(runner)
  if (cached !== undefined && Date.now() - cached.at < REFRESH_MS) return await cached.tiers
  const tiers = (async () => {
    const rows = await runner.query<{ offset_minutes: number }>('select offset_minutes from readings_day_offsets')
    return new Map(rows.map((r) => [r.offset_minutes * MINUTE_MS, dayOffsetTier(r.offset_minutes * MINUTE_MS)]))
  })()
  known.set(runner, { at: Date.now(), tiers })
  tiers.catch(() => { known.delete(runner) })
  return await tiers
}

/**
 * Registers shifted daily tiers for these offsets (ms; whole hours) and fills each from the hourly
 * tier, once; returns the offsets newly registered. The fill holds a SHARE lock on the hourly tier,
 * which waits for every write transaction that has touched it and holds back new ones until the
 * fill commits: a write before it is in the hourly rows it reads, a write after it sees the offset
 * registered and merges its own hours, and none is counted twice. Writes wait for the fill, once
 * per offset. On TimescaleDB nothing is registered: its tiers are continuous aggregates.
 */
export async function registerDayOffsets (sql: Sql, offsetsMs: readonly number[], log?: (message: string) => void): Promise<number[]> {
  const wanted = [...new Set(offsetsMs)].filter(isTierableOffset)
  if (wanted.length === 0 || await engineName(postgresRunner(sql)) !== 'native') return []
  // Known ones take no lock: every start of every service names them again.
  const registered = new Set((await sql<{ offset_minutes: number }[]>`select offset_minutes from readings_day_offsets`).map((r) => r.offset_minutes * MINUTE_MS))
  const added: number[] = []
  for (const offsetMs of wanted.filter((offset) => !registered.has(offset))) {
    const minutes = offsetMs / MINUTE_MS
    const done = await sql.begin(async (tx) => {
      await tx`lock table readings_hourly in share mode`
      const [inserted] = await tx`insert into readings_day_offsets (offset_minutes) values (${minutes}) on conflict do nothing returning offset_minutes`
      if (inserted === undefined) return false
      const started = Date.now()
      await tx.unsafe(`
        insert into readings_daily_offset (offset_minutes, device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
        with h as (
          select $1::smallint as offset_minutes, r.*, date_bin('1 day', r.bucket, timestamptz '2000-01-01T00:00:00Z' - $1::int * interval '1 minute') as day
          from readings_hourly r
        )
        ${MERGED_DAYS}`, [minutes])
      log?.(`filled the daily tier of UTC${minutes < 0 ? '-' : '+'}${Math.abs(minutes / 60)} from the hourly tier in ${Date.now() - started} ms`)
      return true
    })
    if (done) added.push(offsetMs)
  }
  return added
}
