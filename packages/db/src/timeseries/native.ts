import { type AggregateRow, aggregateByBucket } from './states.js'
import { dayOffsetsUpsert, MERGE_INTO_STORED } from './day-offsets.js'
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
    afterInsert: (inserted) => {
      if (inserted.length === 0) return []
      const tiers = TIERS.map((tier) => ({ tier, params: tierParams(aggregateByBucket(inserted, tier.ms)) }))
      // The wall clocks' daily tiers, from the same hourly states.
      const hourly = tiers.find(({ tier }) => tier.name === 'hourly')?.params
      return [...tiers.map(({ tier, params }) => tierUpsert(tier.table, params)), ...(hourly === undefined ? [] : [dayOffsetsUpsert(hourly)])]
    },
    purgeDevices: async (tx, deviceIds) => {
      if (deviceIds.length === 0) return
      await tx.query('delete from readings where device_id = any($1::int[])', [deviceIds])
      for (const table of [...TIERS.map((tier) => tier.table), 'readings_daily_offset']) await tx.query(`delete from ${table} where device_id = any($1::int[])`, [deviceIds])
    }
  }
}

/** A tier statement's parameters: the states as columns. */
function tierParams (rows: AggregateRow[]): unknown[] {
  return [
    rows.map((r) => r.deviceId), rows.map((r) => r.sensorId), rows.map((r) => new Date(r.bucket)),
    rows.map((r) => r.count), rows.map((r) => r.mean), rows.map((r) => r.m2), rows.map((r) => r.sum), rows.map((r) => r.min), rows.map((r) => r.max),
    rows.map((r) => new Date(r.firstAt)), rows.map((r) => r.first), rows.map((r) => new Date(r.lastAt)), rows.map((r) => r.last)
  ]
}

/**
 * One statement per tier: the batch's states merged into the stored ones. Rows are sorted by key
 * so that concurrent batches lock tier rows in the same order and cannot deadlock.
 */
function tierUpsert (table: string, params: unknown[]): Statement {
  return {
    text: `
    insert into ${table} as t (device_id, sensor_id, bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val)
    select * from unnest($1::int[], $2::int[], $3::timestamptz[], $4::bigint[], $5::float8[], $6::float8[], $7::float8[],
                         $8::float8[], $9::float8[], $10::timestamptz[], $11::float8[], $12::timestamptz[], $13::float8[])
    on conflict (device_id, sensor_id, bucket) do update set ${MERGE_INTO_STORED}`,
    params
  }
}

export type { ReadingRow }
