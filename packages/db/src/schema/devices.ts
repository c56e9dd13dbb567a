import { sql } from 'drizzle-orm'
import {
  bigint, boolean, check, doublePrecision, index, integer, jsonb, macaddr, pgTable, primaryKey, serial, text, uniqueIndex
} from 'drizzle-orm/pg-core'
import { publicUuid, revision, timestamps, tstz } from './columns.js'
import { kits, sensors, tags } from './catalogue.js'
import { users } from './users.js'

export const deviceStates = ['not_configured', 'never_published', 'has_published', 'archived'] as const
export type DeviceState = (typeof deviceStates)[number]

export const devices = pgTable('devices', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  ownerId: integer().notNull().references(() => users.id, { onDelete: 'cascade' }),
  kitId: integer().references(() => kits.id, { onDelete: 'set null' }),
  name: text().notNull(),
  description: text(),
  /** automatic (contract: States and transitions); only the platform writes it */
  state: text().$type<DeviceState>().notNull().default('not_configured'),
  archivedAt: tstz(),
  /** secret that identifies the device on MQTT; stored as issued because the device sends it verbatim */
  deviceToken: text(),
  macAddress: macaddr(),
  oldMacAddress: macaddr(),
  exposure: text(),
  latitude: doublePrecision(),
  longitude: doublePrecision(),
  elevation: integer(),
  geohash: text(),
  city: text(),
  countryCode: text(),
  isPrivate: boolean().notNull().default(false),
  enableForwarding: boolean().notNull().default(false),
  preciseLocation: boolean().notNull().default(true),
  isTest: boolean().notNull().default(false),
  notifyStoppedPublishing: boolean().notNull().default(false),
  notifyLowBattery: boolean().notNull().default(false),
  stoppedPublishingNotifiedAt: tstz(),
  lowBatteryNotifiedAt: tstz(),
  hardwareNameOverride: text(),
  hardwareTypeOverride: text(),
  hardwareVersionOverride: text(),
  hardwareSlugOverride: text(),
  /** the last `info` status message, verbatim, and when it arrived */
  lastStatusMessage: jsonb(),
  lastStatusAt: tstz(),
  lastSeenAt: tstz(),
  lastReadingAt: tstz(),
  csvArchiveRequestedAt: tstz(),
  meta: jsonb(),
  /** bumped by triggers when anything the representation shows changes (migration 0009) */
  revision: revision(),
  ...timestamps
}, (t) => [
  index('devices_owner_idx').on(t.ownerId),
  uniqueIndex('devices_device_token_key').on(t.deviceToken),
  index('devices_mac_address_idx').on(t.macAddress),
  index('devices_geohash_idx').on(t.geohash),
  index('devices_last_reading_idx').on(t.lastReadingAt),
  check('devices_state_check', sql`${t.state} in ('not_configured', 'never_published', 'has_published', 'archived')`),
  check('devices_exposure_check', sql`${t.exposure} is null or ${t.exposure} in ('indoor', 'outdoor')`),
  check('devices_latitude_check', sql`${t.latitude} is null or ${t.latitude} between -90 and 90`),
  check('devices_longitude_check', sql`${t.longitude} is null or ${t.longitude} between -180 and 180`)
])

export const postprocessings = pgTable('postprocessings', {
  id: serial().primaryKey(),
  deviceId: integer().notNull().unique().references(() => devices.id, { onDelete: 'cascade' }),
  blueprintUrl: text(),
  hardwareUrl: text(),
  forwardingParams: text(),
  meta: text(),
  latestPostprocessing: tstz(),
  ...timestamps
})

/** Joins a device to a sensor (contract: Component, not reachable through the API). */
export const components = pgTable('components', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  deviceId: integer().notNull().references(() => devices.id, { onDelete: 'cascade' }),
  sensorId: integer().notNull().references(() => sensors.id, { onDelete: 'cascade' }),
  key: text(),
  /** per-device calibration in x (raw_value); value = equation(raw_value), or raw_value without one */
  equation: text(),
  lastReadingAt: tstz(),
  ...timestamps
}, (t) => [uniqueIndex('components_device_sensor_key').on(t.deviceId, t.sensorId)])

export const deviceTags = pgTable('device_tags', {
  deviceId: integer().notNull().references(() => devices.id, { onDelete: 'cascade' }),
  tagId: integer().notNull().references(() => tags.id, { onDelete: 'cascade' })
}, (t) => [primaryKey({ columns: [t.deviceId, t.tagId] }), index('device_tags_tag_idx').on(t.tagId)])

/** Factory test reports published on `device/inventory` (behaviour.md §9.2). */
export const deviceInventories = pgTable('device_inventories', {
  id: serial().primaryKey(),
  report: jsonb(),
  rawPayload: text().notNull(),
  receivedAt: tstz().notNull().defaultNow()
})

/**
 * What the ingest did not store of a device's messages, for its owner (issue 35): unknown sensors
 * skipped, messages refused whole and the last refusal. A row only for a device that had a
 * problem; merged by one statement per few seconds for every device of a process
 * (queries/ingest-status.ts), never written per message. Every part is bounded.
 */
export const deviceIngestStatus = pgTable('device_ingest_status', {
  deviceId: integer().primaryKey().references(() => devices.id, { onDelete: 'cascade' }),
  /** the first problem counted here: the counts are since then */
  since: tstz().notNull().defaultNow(),
  lastProblemAt: tstz().notNull(),
  /** sensor ids (numbers) or keys (strings) skipped, the latest first, at most 20 */
  unknownSensors: jsonb().notNull().default(sql`'[]'::jsonb`),
  skippedValues: bigint({ mode: 'number' }).notNull().default(0),
  rejectedMessages: bigint({ mode: 'number' }).notNull().default(0),
  /** `{at, reason, problems}` of the latest message refused whole, problems bounded */
  lastRejection: jsonb(),
  /**
   * its own revision, part of the device's (migration 0009): the merge every few seconds would
   * otherwise lock device rows that the readings write path locks too
   */
  revision: revision()
})
