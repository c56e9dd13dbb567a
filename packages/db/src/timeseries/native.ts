import { type AggregateRow, aggregateByBucket } from './states.js'
import { type ReadingRow, type Statement, type TimeSeriesEngine, TIERS } from './engine.js'

const MONTH_KEY = (at: Date): string => `${at.getUTCFullYear()}-${at.getUTCMonth()}`

/**
 * Native engine (any PostgreSQL 15+): raw rows in monthly range partitions, hourly and daily tiers
 * upserted in the write transaction by merging each batch's states into the stored ones (Chan).
 */
export function nativeEngine (): TimeSeriesEngine {
  // Months whose partition is known to exist, so the common case costs no query at all.
  const known = new Set<string>()
  return {
    name: 'native',
    prepare: async (runner, times) => {
      // Only the months that occur: a batch spanning years of backlog creates no empty months.
      const missing = new Map<string, Date>()
      for (const at of times) {
        const key = MONTH_KEY(at)
        if (!known.has(key) && !missing.has(key)) missing.set(key, new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)))
      }
      if (missing.size === 0) return
      const ensure = async (): Promise<void> => { await runner.query('select esp_ensure_reading_partitions(m, m) from unnest($1::timestamptz[]) as m', [[...missing.values()]]) }
      try {
        await ensure()
      } catch (err) {
        // Concurrent first writes into a new month (seen under load): the function's second look
        // after its advisory lock can miss the table the winner just created (cached catalog) and
        // fail with duplicate_table. A new statement sees it, so one retry settles it.
        if ((err as { code?: unknown }).code !== '42P07') throw err
        await ensure()
      }
      for (const key of missing.keys()) known.add(key)
    },
    afterInsert: (inserted) => TIERS.map((tier) => tierUpsert(tier.table, aggregateByBucket(inserted, tier.ms))).filter((s): s is Statement => s !== null),
    purgeDevices: async (tx, deviceIds) => {
      if (deviceIds.length === 0) return
      await tx.query('delete from readings where device_id = any($1::int[])', [deviceIds])
      for (const tier of TIERS) await tx.query(`delete from ${tier.table} where device_id = any($1::int[])`, [deviceIds])
    }
  }
}

/**
 * One statement per tier: the batch's states merged into the stored ones. Rows are sorted by key
 * so that concurrent batches lock tier rows in the same order and cannot deadlock. In an UPDATE,
 * every right-hand side reads the old row, so the formulas below see consistent old values.
 */
function tierUpsert (table: string, rows: AggregateRow[]): Statement | null {
  if (rows.length === 0) return null
  const cols = {
    device: rows.map((r) => r.deviceId),
    sensor: rows.map((r) => r.sensorId),
    bucket: rows.map((r) => new Date(r.bucket)),
    count: rows.map((r) => r.count),
    mean: rows.map((r) => r.mean),
    m2: rows.map((r) => r.m2),
    sum: rows.map((r) => r.sum),
    min: rows.map((r) => r.min),
    max: rows.map((r) => r.max),
    firstAt: rows.map((r) => new Date(r.firstAt)),
    first: rows.map((r) => r.first),
    lastAt: rows.map((r) => new Date(r.lastAt)),
    last: rows.map((r) => r.last)
  }
  return {
    text: `
    insert into ${table} as t (device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
    select * from unnest($1::int[], $2::int[], $3::timestamptz[], $4::bigint[], $5::float8[], $6::float8[], $7::float8[],
                         $8::float8[], $9::float8[], $10::timestamptz[], $11::float8[], $12::timestamptz[], $13::float8[])
    on conflict (device_id, sensor_id, bucket) do update set
      count = t.count + excluded.count,
      mean = t.mean + (excluded.mean - t.mean) * excluded.count / (t.count + excluded.count),
      m2 = t.m2 + excluded.m2 + (excluded.mean - t.mean) * (excluded.mean - t.mean) * t.count * excluded.count / (t.count + excluded.count),
      sum = t.sum + excluded.sum,
      min = least(t.min, excluded.min),
      max = greatest(t.max, excluded.max),
      first_val = case when excluded.first_at < t.first_at then excluded.first_val else t.first_val end,
      first_at = least(t.first_at, excluded.first_at),
      last_val = case when excluded.last_at > t.last_at then excluded.last_val else t.last_val end,
      last_at = greatest(t.last_at, excluded.last_at)`,
    params: [cols.device, cols.sensor, cols.bucket, cols.count, cols.mean, cols.m2, cols.sum, cols.min, cols.max, cols.firstAt, cols.first, cols.lastAt, cols.last]
  }
}

export type { ReadingRow }
