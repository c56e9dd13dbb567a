import type { TimeSeriesEngine } from './engine.js'

/**
 * TimescaleDB engine: a hypertable and hierarchical continuous aggregates with real-time
 * aggregation, so neither step of a write has extra work; refresh and compression run as policies.
 */
export function timescaleEngine (): TimeSeriesEngine {
  return {
    name: 'timescale',
    prepare: async () => {},
    afterInsert: async () => {}
  }
}
