import { sql } from 'drizzle-orm'
import { type AnyPgColumn, bigint, check, index, integer, pgTable, primaryKey, serial, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { publicUuid, timestamps } from './columns.js'

export const measurements = pgTable('measurements', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  name: text().notNull().unique(),
  description: text(),
  definition: text(),
  unit: text(),
  ...timestamps
})

export const sensors = pgTable('sensors', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  parentId: integer().references((): AnyPgColumn => sensors.id, { onDelete: 'set null' }),
  name: text().notNull(),
  description: text(),
  unit: text(),
  datasheet: text(),
  unitDefinition: text(),
  measurementId: integer().references(() => measurements.id, { onDelete: 'set null' }),
  /** the key devices may post instead of the id (behaviour.md §6.2) */
  defaultKey: text(),
  /** calibration expression in x: value = equation(raw_value) */
  equation: text(),
  reverseEquation: text(),
  ...timestamps
}, (t) => [
  index('sensors_parent_idx').on(t.parentId),
  index('sensors_measurement_idx').on(t.measurementId)
])

/** A kit is the blueprint of a device (older form); its sensors carry the hashes devices may post. */
export const kits = pgTable('kits', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  /** not unique: the platform's SCK 2.1 variants share `sck:2,1` */
  slug: text().notNull(),
  name: text().notNull(),
  description: text(),
  ...timestamps
}, (t) => [index('kits_slug_idx').on(t.slug)])

export const kitSensors = pgTable('kit_sensors', {
  kitId: integer().notNull().references(() => kits.id, { onDelete: 'cascade' }),
  sensorId: integer().notNull().references(() => sensors.id, { onDelete: 'cascade' }),
  key: text().notNull(),
  position: integer().notNull().default(0)
}, (t) => [
  primaryKey({ columns: [t.kitId, t.sensorId] }),
  uniqueIndex('kit_sensors_key_key').on(t.kitId, t.key)
])

export const tags = pgTable('tags', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  name: text().notNull(),
  description: text(),
  ...timestamps
}, (t) => [uniqueIndex('tags_name_lower_key').on(sql`lower(${t.name})`)])

export const tagSensors = pgTable('tag_sensors', {
  id: serial().primaryKey(),
  name: text().notNull().unique(),
  description: text(),
  ...timestamps
})

export const sensorTags = pgTable('sensor_tags', {
  sensorId: integer().notNull().references(() => sensors.id, { onDelete: 'cascade' }),
  tagSensorId: integer().notNull().references(() => tagSensors.id, { onDelete: 'cascade' })
}, (t) => [primaryKey({ columns: [t.sensorId, t.tagSensorId] })])

/**
 * One row, bumped by a trigger on every statement that writes the reference data (measurements,
 * sensors, kits and their sensors, tags, tag sensors and sensor tags), in the writing transaction,
 * which also sends a `catalogue` change. Processes keep the reference data in memory and read this
 * row before trusting it, so a write holds everywhere once it committed, however it was made
 * (domain/src/catalogue/reference-data.ts).
 */
export const catalogueGeneration = pgTable('catalogue_generation', {
  id: integer().primaryKey().default(1),
  value: bigint({ mode: 'number' }).notNull().default(0)
}, (t) => [check('catalogue_generation_one_row', sql`${t.id} = 1`)])
