import { asc, eq } from 'drizzle-orm'
import { type Handle, inTransaction } from '../client.js'
import { catalogueGeneration, kits, kitSensors, measurements, sensors, sensorTags, tags, tagSensors } from '../schema/catalogue.js'

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
export async function loadCatalogue (database: Pick<Handle, 'sql'>): Promise<CatalogueRows> {
  return await inTransaction(database, async ({ db }) => {
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
export function generationsReader (database: Pick<Handle, 'sql'>): () => Promise<Generations> {
  return async () => {
    const [row] = await database.sql.unsafe<Generations[]>(
      'select (select value from auth_generation where id = 1) as auth, (select value from catalogue_generation where id = 1) as catalogue', [], { prepare: true })
    return { auth: row?.auth ?? 0, catalogue: row?.catalogue ?? 0 }
  }
}
