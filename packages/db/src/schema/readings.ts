import { doublePrecision, integer, pgTable, primaryKey } from 'drizzle-orm/pg-core'
import { revision, tstz } from './columns.js'
import { devices } from './devices.js'
import { sensors } from './catalogue.js'

/**
 * Raw readings. The natural key makes ingest idempotent (first write wins). The time-series
 * engines (db/timeseries) turn this table into a hypertable or a range-partitioned table and add
 * the rollup tiers; no foreign keys here, because purging a device deletes its readings in bulk.
 */
export const readings = pgTable('readings', {
  deviceId: integer().notNull(),
  sensorId: integer().notNull(),
  recordedAt: tstz().notNull(),
  value: doublePrecision(),
  rawValue: doublePrecision(),
  addedAt: tstz().notNull().defaultNow()
}, (t) => [primaryKey({ columns: [t.deviceId, t.sensorId, t.recordedAt] })])

/** Latest and previous value per device and sensor: what `GET /devices/:id` shows, never a scan of readings. */
export const latestReadings = pgTable('latest_readings', {
  deviceId: integer().notNull().references(() => devices.id, { onDelete: 'cascade' }),
  sensorId: integer().notNull().references(() => sensors.id, { onDelete: 'cascade' }),
  recordedAt: tstz().notNull(),
  value: doublePrecision(),
  rawValue: doublePrecision(),
  prevRecordedAt: tstz(),
  prevValue: doublePrecision(),
  prevRawValue: doublePrecision(),
  addedAt: tstz().notNull().defaultNow(),
  /**
   * Moves (migration 0010) when a write stores a reading of this sensor older than the hour of its
   * latest one: the hours before that hour are unchanged while it stays, so what was read of them
   * may be kept (an area's statistics keep closed days per process).
   */
  historyRevision: revision()
}, (t) => [primaryKey({ columns: [t.deviceId, t.sensorId] })])
