import type { TimeSeriesEngine } from './engine.js'

/**
 * TimescaleDB engine: a hypertable and hierarchical continuous aggregates with real-time
 * aggregation, so neither step of a write has extra work; refresh and compression run as policies.
 */
export function timescaleEngine (): TimeSeriesEngine {
  return {
    name: 'timescale',
    prepare: async () => {},
    afterInsert: () => [],
    // The continuous aggregates cannot be deleted from: the delete leaves invalidations, and the
    // refresh policies (start_offset NULL, so whatever the age) drop the purged buckets at their
    // next run. Device ids are never reused, so nothing can read those buckets meanwhile.
    purgeDevices: async (tx, deviceIds) => {
      if (deviceIds.length === 0) return
      await tx.query('delete from readings where device_id = any($1::int[])', [deviceIds])
    }
  }
}
