import { and, asc, eq, ne, sql } from 'drizzle-orm'
import { type Handle, inTransaction } from '../client.js'
import { catalogueGeneration, kits, kitSensors, measurements, sensors, sensorTags, tags, tagSensors } from '../schema/catalogue.js'
import { deviceTags } from '../schema/devices.js'
import { type FilterSpec, type ListQuery, listPage } from './lists.js'

export type MeasurementRow = typeof measurements.$inferSelect
export type SensorRow = typeof sensors.$inferSelect
export type KitRow = typeof kits.$inferSelect
export type TagRow = typeof tags.$inferSelect
export type TagSensorRow = typeof tagSensors.$inferSelect

/** The reference data as one snapshot saw it, with the generation that snapshot carried. */
export interface CatalogueRows {
  generation: number
  measurements: MeasurementRow[]
  /** by name, then id: the order of a device's sensors */
  sensors: SensorRow[]
  kits: KitRow[]
  /** by kit, then blueprint position */
  kitSensors: Array<{ kitId: number, sensorId: number, key: string }>
  /** by name */
  tags: TagRow[]
  tagSensors: TagSensorRow[]
  /** the tag names of each sensor, by name */
  sensorTags: Array<{ sensorId: number, name: string }>
}

/**
 * Every row of the reference data and its generation (catalogue_generation), read in one
 * repeatable-read snapshot so that the rows are exactly those of that generation. The orders are
 * PostgreSQL's, so names sort as they did when the statements sorted them.
 */
export async function loadCatalogue (h: Handle): Promise<CatalogueRows> {
  return await inTransaction(h, async ({ db }) => {
    const [generation] = await db.select({ value: catalogueGeneration.value }).from(catalogueGeneration).where(eq(catalogueGeneration.id, 1))
    return {
      generation: generation?.value ?? 0,
      measurements: await db.select().from(measurements).orderBy(asc(measurements.id)),
      sensors: await db.select().from(sensors).orderBy(asc(sensors.name), asc(sensors.id)),
      kits: await db.select().from(kits).orderBy(asc(kits.id)),
      kitSensors: await db.select({ kitId: kitSensors.kitId, sensorId: kitSensors.sensorId, key: kitSensors.key }).from(kitSensors)
        .orderBy(asc(kitSensors.kitId), asc(kitSensors.position), asc(kitSensors.sensorId)),
      tags: await db.select().from(tags).orderBy(asc(tags.name), asc(tags.id)),
      tagSensors: await db.select().from(tagSensors).orderBy(asc(tagSensors.id)),
      sensorTags: await db.select({ sensorId: sensorTags.sensorId, name: tagSensors.name }).from(sensorTags)
        .innerJoin(tagSensors, eq(tagSensors.id, sensorTags.tagSensorId)).orderBy(asc(tagSensors.name))
    }
  }, 'isolation level repeatable read read only')
}

/** The generations of what processes keep in memory: credentials (auth) and the reference data. */
export interface Generations { auth: number, catalogue: number }

/** Both generations in one prepared statement, for the read barrier every cache shares. */
export function generationsReader (h: Handle): () => Promise<Generations> {
  return async () => {
    const [row] = await h.sql.unsafe<Generations[]>(
      'select (select value from auth_generation where id = 1) as auth, (select value from catalogue_generation where id = 1) as catalogue', [], { prepare: true })
    return { auth: row?.auth ?? 0, catalogue: row?.catalogue ?? 0 }
  }
}

/**
 * What stands for the connection pool (or the transaction) behind a handle: the key of what a
 * process keeps per pool (the generation barrier, the reference data). Two handles of one pool
 * give the same key.
 */
export const poolOf = (h: Handle): object => h.sql

// ---------------------------------------------------------------- lists and single rows

type Page<T> = Promise<{ rows: T[], total: number }>

export const measurementFilters: FilterSpec = {
  id: { column: measurements.id, type: 'integer' },
  uuid: { column: measurements.uuid, type: 'uuid' },
  name: { column: measurements.name, type: 'text' },
  created_at: { column: measurements.createdAt, type: 'timestamp' },
  updated_at: { column: measurements.updatedAt, type: 'timestamp' }
}

export const sensorFilters: FilterSpec = {
  id: { column: sensors.id, type: 'integer' },
  uuid: { column: sensors.uuid, type: 'uuid' },
  name: { column: sensors.name, type: 'text' },
  description: { column: sensors.description, type: 'text' },
  unit: { column: sensors.unit, type: 'text' },
  measurement_id: { column: sensors.measurementId, type: 'integer' },
  parent_id: { column: sensors.parentId, type: 'integer' },
  ancestry: { column: sql`${sensors.parentId}::text`, type: 'text' },
  created_at: { column: sensors.createdAt, type: 'timestamp' },
  updated_at: { column: sensors.updatedAt, type: 'timestamp' }
}

export const kitFilters: FilterSpec = {
  id: { column: kits.id, type: 'integer' },
  uuid: { column: kits.uuid, type: 'uuid' },
  slug: { column: kits.slug, type: 'text' },
  name: { column: kits.name, type: 'text' }
}

export const tagFilters: FilterSpec = {
  id: { column: tags.id, type: 'integer' },
  uuid: { column: tags.uuid, type: 'uuid' },
  name: { column: tags.name, type: 'text' },
  description: { column: tags.description, type: 'text' },
  created_at: { column: tags.createdAt, type: 'timestamp' },
  updated_at: { column: tags.updatedAt, type: 'timestamp' }
}

export const tagSensorFilters: FilterSpec = {
  id: { column: tagSensors.id, type: 'integer' },
  name: { column: tagSensors.name, type: 'text' },
  created_at: { column: tagSensors.createdAt, type: 'timestamp' },
  updated_at: { column: tagSensors.updatedAt, type: 'timestamp' }
}

/** A page of each catalogue list (filters of its field map above) and the total. */
export const listMeasurements = async (h: Handle, query: ListQuery): Page<MeasurementRow> => await listPage(h, measurements, measurementFilters, query, measurements.id)
export const listSensors = async (h: Handle, query: ListQuery): Page<SensorRow> => await listPage(h, sensors, sensorFilters, query, sensors.id)
export const listKits = async (h: Handle, query: ListQuery): Page<KitRow> => await listPage(h, kits, kitFilters, query, kits.id)
export const listTags = async (h: Handle, query: ListQuery): Page<TagRow> => await listPage(h, tags, tagFilters, query, tags.id)
export const listTagSensors = async (h: Handle, query: ListQuery): Page<TagSensorRow> => await listPage(h, tagSensors, tagSensorFilters, query, tagSensors.id)

const first = async <T>(rows: Promise<T[]>): Promise<T | undefined> => (await rows)[0]

export const measurementById = async (h: Handle, id: number): Promise<MeasurementRow | undefined> => await first(h.db.select().from(measurements).where(eq(measurements.id, id)))
export const sensorById = async (h: Handle, id: number): Promise<SensorRow | undefined> => await first(h.db.select().from(sensors).where(eq(sensors.id, id)))
export const kitById = async (h: Handle, id: number): Promise<KitRow | undefined> => await first(h.db.select().from(kits).where(eq(kits.id, id)))
export const tagSensorById = async (h: Handle, id: number): Promise<TagSensorRow | undefined> => await first(h.db.select().from(tagSensors).where(eq(tagSensors.id, id)))

/** A tag by id or by its exact name. */
export async function findTagRow (h: Handle, key: { id: number } | { name: string }): Promise<TagRow | undefined> {
  const where = 'id' in key ? eq(tags.id, key.id) : eq(tags.name, key.name)
  return await first(h.db.select().from(tags).where(where).limit(1))
}

// ---------------------------------------------------------------- writes

/** Whether a measurement with this id exists. */
export const measurementExists = async (h: Handle, id: number): Promise<boolean> =>
  (await h.db.select({ id: measurements.id }).from(measurements).where(eq(measurements.id, id)).limit(1)).length > 0
/** Whether a sensor with this id exists. */
export const sensorExists = async (h: Handle, id: number): Promise<boolean> =>
  (await h.db.select({ id: sensors.id }).from(sensors).where(eq(sensors.id, id)).limit(1)).length > 0

type Values<T extends { $inferInsert: object }> = T['$inferInsert']
/** What a write changes: the columns given (a key left undefined changes nothing). */
type Changes<T extends { $inferInsert: object }> = { [K in Exclude<keyof T['$inferInsert'], 'id'>]?: T['$inferInsert'][K] | undefined }

export const insertSensor = async (h: Handle, values: Values<typeof sensors>): Promise<SensorRow | undefined> => await first(h.db.insert(sensors).values(values).returning())
export const updateSensor = async (h: Handle, id: number, values: Changes<typeof sensors>): Promise<SensorRow | undefined> =>
  await first(h.db.update(sensors).set(values).where(eq(sensors.id, id)).returning())

export const insertMeasurement = async (h: Handle, values: Values<typeof measurements>): Promise<MeasurementRow | undefined> => await first(h.db.insert(measurements).values(values).returning())
export const updateMeasurement = async (h: Handle, id: number, values: Changes<typeof measurements>): Promise<MeasurementRow | undefined> =>
  await first(h.db.update(measurements).set(values).where(eq(measurements.id, id)).returning())

/** Whether another tag (not `exceptId`) has this name, regardless of case. */
export async function tagNameTaken (h: Handle, name: string, exceptId?: number): Promise<boolean> {
  const clash = await h.db.select({ id: tags.id }).from(tags)
    .where(and(sql`lower(${tags.name}) = lower(${name})`, exceptId === undefined ? undefined : ne(tags.id, exceptId))).limit(1)
  return clash.length > 0
}

export const insertTag = async (h: Handle, values: Values<typeof tags>): Promise<TagRow | undefined> => await first(h.db.insert(tags).values(values).returning())
export const updateTag = async (h: Handle, id: number, values: Changes<typeof tags>): Promise<TagRow | undefined> =>
  await first(h.db.update(tags).set(values).where(eq(tags.id, id)).returning())

/** Deletes a tag and removes it from every device. */
export async function deleteTagRow (h: Handle, id: number): Promise<void> {
  await h.db.delete(deviceTags).where(eq(deviceTags.tagId, id))
  await h.db.delete(tags).where(eq(tags.id, id))
}

export const insertTagSensor = async (h: Handle, values: Values<typeof tagSensors>): Promise<TagSensorRow | undefined> => await first(h.db.insert(tagSensors).values(values).returning())
export const updateTagSensor = async (h: Handle, id: number, values: Changes<typeof tagSensors>): Promise<TagSensorRow | undefined> =>
  await first(h.db.update(tagSensors).set(values).where(eq(tagSensors.id, id)).returning())

export async function deleteTagSensorRow (h: Handle, id: number): Promise<void> {
  await h.db.delete(tagSensors).where(eq(tagSensors.id, id))
}
