import { and, eq, ne, sql, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { deviceTags, type Executor, isPgCode, kits, type KitRow, measurements, type MeasurementRow, PgCode, sensors, type SensorRow, tags, type TagRow, tagSensors, type TagSensorRow } from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import type { FilterSpec } from '../lists/filter-compiler.js'
import { compileCalibration } from '../readings/calibration.js'
import { asBody, BodyReader } from '../validation/body-reader.js'
import { recordId, recordIdOr404 } from '../validation/record-id.js'
import type { Catalogue, JsonText } from './reference-data.js'

export { presentMeasurement, presentSensor, presentTag, presentTagSensor } from './reference-data.js'

/** Catalogue writes are for admins (behaviour.md §3: admin policy); reads are public. */
export function assertAdmin (viewer: Viewer | null): void {
  if (viewer === null) throw errors.unauthorized()
  if (!isAdmin(viewer)) throw errors.forbidden()
}

async function one<T> (rows: Promise<T[]>, what: string, key: string | number): Promise<T> {
  const [row] = await rows
  return found(row, what, key)
}

function found<T> (value: T | undefined, what: string, key: string | number): T {
  if (value === undefined) throw errors.notFound(what, key)
  return value
}

// ---------------------------------------------------------------- measurements

export const measurementFilters: FilterSpec = {
  id: { column: measurements.id, type: 'integer' },
  uuid: { column: measurements.uuid, type: 'uuid' },
  name: { column: measurements.name, type: 'text' },
  created_at: { column: measurements.createdAt, type: 'timestamp' },
  updated_at: { column: measurements.updatedAt, type: 'timestamp' }
}

export const findMeasurement = async (db: Executor, raw: string): Promise<MeasurementRow> =>
  await one(db.select().from(measurements).where(eq(measurements.id, recordIdOr404('Measurement', raw))), 'Measurement', Number(raw))

// ---------------------------------------------------------------- sensors

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

export const findSensor = async (db: Executor, raw: string): Promise<SensorRow> =>
  await one(db.select().from(sensors).where(eq(sensors.id, recordIdOr404('Sensor', raw))), 'Sensor', Number(raw))

// ---------------------------------------------------------------- writes

const defined = <T extends object>(values: T): Partial<T> =>
  Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>

/** A unique index has the last word on names: concurrent writes cannot both pass a check. */
async function uniqueName<T> (work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    if (isPgCode(err, PgCode.uniqueViolation)) throw errors.unprocessable({ name: ['has already been taken'] })
    throw err
  }
}

async function assertExists (db: Executor, table: PgTable, column: PgColumn, id: number | null | undefined, field: string, fields: BodyReader): Promise<void> {
  if (id === null || id === undefined) return
  const rows = await db.select({ id: column }).from(table).where(eq(column, id)).limit(1)
  if (rows.length === 0) fields.add(field, 'does not exist')
}

export async function writeSensor (db: Executor, raw: unknown, viewer: Viewer | null, existing?: SensorRow): Promise<SensorRow> {
  assertAdmin(viewer)
  const f = new BodyReader(asBody(raw), existing === undefined)
  const values = defined({
    name: f.text('name', { max: 255, required: true }) ?? undefined,
    description: f.text('description', { required: true }),
    unit: f.text('unit', { max: 255 }),
    datasheet: f.text('datasheet', { max: 2048 }),
    unitDefinition: f.text('unit_definition', { max: 2048 }),
    defaultKey: f.text('default_key', { max: 255 }),
    equation: f.text('equation', { max: 1000 }),
    reverseEquation: f.text('reverse_equation', { max: 1000 }),
    measurementId: f.id('measurement_id'),
    parentId: f.id('parent_id')
  })
  for (const field of ['equation', 'reverse_equation'] as const) {
    const source = values[field === 'equation' ? 'equation' : 'reverseEquation']
    if (typeof source === 'string') {
      try { compileCalibration(source) } catch (err) { f.add(field, err instanceof Error ? err.message : 'is not a valid expression in x') }
    }
  }
  if (existing !== undefined && values.parentId === existing.id) f.add('parent_id', 'cannot be the sensor itself')
  await assertExists(db, measurements, measurements.id, values.measurementId, 'measurement_id', f)
  await assertExists(db, sensors, sensors.id, values.parentId, 'parent_id', f)
  f.check()
  if (existing === undefined) return await one(db.insert(sensors).values({ ...values, name: values.name ?? '' }).returning(), 'Sensor', 0)
  return await one(db.update(sensors).set({ ...values, updatedAt: new Date() }).where(eq(sensors.id, existing.id)).returning(), 'Sensor', existing.id)
}

export async function writeMeasurement (db: Executor, raw: unknown, viewer: Viewer | null, existing?: MeasurementRow): Promise<MeasurementRow> {
  assertAdmin(viewer)
  const f = new BodyReader(asBody(raw), existing === undefined)
  const values = defined({
    name: f.text('name', { max: 255, required: true }) ?? undefined,
    description: f.text('description', { required: true }),
    unit: f.text('unit', { max: 255 }),
    definition: f.text('definition', { max: 2048 })
  })
  f.check()
  return await uniqueName(async () => existing === undefined
    ? await one(db.insert(measurements).values({ ...values, name: values.name ?? '' }).returning(), 'Measurement', 0)
    : await one(db.update(measurements).set({ ...values, updatedAt: new Date() }).where(eq(measurements.id, existing.id)).returning(), 'Measurement', existing.id))
}

// ---------------------------------------------------------------- kits

export const kitFilters: FilterSpec = {
  id: { column: kits.id, type: 'integer' },
  uuid: { column: kits.uuid, type: 'uuid' },
  slug: { column: kits.slug, type: 'text' },
  name: { column: kits.name, type: 'text' }
}

export const findKit = async (db: Executor, raw: string): Promise<KitRow> =>
  await one(db.select().from(kits).where(eq(kits.id, recordIdOr404('Kit', raw))), 'Kit', Number(raw))

// ---------------------------------------------------------------- tags and tag sensors

export const tagFilters: FilterSpec = {
  id: { column: tags.id, type: 'integer' },
  uuid: { column: tags.uuid, type: 'uuid' },
  name: { column: tags.name, type: 'text' },
  description: { column: tags.description, type: 'text' },
  created_at: { column: tags.createdAt, type: 'timestamp' },
  updated_at: { column: tags.updatedAt, type: 'timestamp' }
}

/** A tag by id or by its exact name (the established platform's friendly id). */
export async function findTag (db: Executor, key: string): Promise<TagRow> {
  const id = recordId(key)
  const where: SQL = id !== null ? eq(tags.id, id) : eq(tags.name, key)
  return await one(db.select().from(tags).where(where).limit(1), 'Tag', id ?? key)
}

export async function writeTag (db: Executor, raw: unknown, viewer: Viewer | null, existing?: TagRow): Promise<TagRow> {
  assertAdmin(viewer)
  const f = new BodyReader(asBody(raw), existing === undefined)
  const values = defined({ name: f.text('name', { max: 255, required: true }) ?? undefined, description: f.text('description') })
  if (values.name !== undefined) {
    const clash = await db.select({ id: tags.id }).from(tags)
      .where(and(sql`lower(${tags.name}) = lower(${values.name})`, existing === undefined ? undefined : ne(tags.id, existing.id))).limit(1)
    if (clash.length > 0) f.add('name', 'has already been taken')
  }
  f.check()
  return await uniqueName(async () => existing === undefined
    ? await one(db.insert(tags).values({ ...values, name: values.name ?? '' }).returning(), 'Tag', 0)
    : await one(db.update(tags).set({ ...values, updatedAt: new Date() }).where(eq(tags.id, existing.id)).returning(), 'Tag', existing.id))
}

/** Deleting a tag removes it from every device (the join rows cascade). */
export async function deleteTag (db: Executor, tag: TagRow, viewer: Viewer | null): Promise<void> {
  assertAdmin(viewer)
  await db.delete(deviceTags).where(eq(deviceTags.tagId, tag.id))
  await db.delete(tags).where(eq(tags.id, tag.id))
}

export const tagSensorFilters: FilterSpec = {
  id: { column: tagSensors.id, type: 'integer' },
  name: { column: tagSensors.name, type: 'text' },
  created_at: { column: tagSensors.createdAt, type: 'timestamp' },
  updated_at: { column: tagSensors.updatedAt, type: 'timestamp' }
}

export const findTagSensor = async (db: Executor, raw: string): Promise<TagSensorRow> =>
  await one(db.select().from(tagSensors).where(eq(tagSensors.id, recordIdOr404('TagSensor', raw))), 'TagSensor', Number(raw))

export async function writeTagSensor (db: Executor, raw: unknown, viewer: Viewer | null, existing?: TagSensorRow): Promise<TagSensorRow> {
  assertAdmin(viewer)
  const f = new BodyReader(asBody(raw), existing === undefined)
  const values = defined({ name: f.text('name', { max: 255, required: true }) ?? undefined, description: f.text('description') })
  f.check()
  return await uniqueName(async () => existing === undefined
    ? await one(db.insert(tagSensors).values({ ...values, name: values.name ?? '' }).returning(), 'TagSensor', 0)
    : await one(db.update(tagSensors).set({ ...values, updatedAt: new Date() }).where(eq(tagSensors.id, existing.id)).returning(), 'TagSensor', existing.id))
}

export async function deleteTagSensor (db: Executor, row: TagSensorRow, viewer: Viewer | null): Promise<void> {
  assertAdmin(viewer)
  await db.delete(tagSensors).where(eq(tagSensors.id, row.id))
}

// ---------------------------------------------------------------- reads from the reference data

/** A record of the reference data in memory by its path id (reference-data.ts); 404 when there is none. */
function inMemory<T> (what: string, raw: string, lookup: (id: number) => T | undefined): T {
  const id = recordIdOr404(what, raw)
  return found(lookup(id), what, id)
}

/** GET /sensors/:id, /kits/:id, ... from the reference data in memory, as JSON text made once. */
export const sensorIn = (c: Catalogue, raw: string): JsonText => inMemory('Sensor', raw, (id) => c.sensorText(id))
export const measurementIn = (c: Catalogue, raw: string): JsonText => inMemory('Measurement', raw, (id) => c.measurementText(id))
export const kitIn = (c: Catalogue, raw: string): JsonText => inMemory('Kit', raw, (id) => c.kitText(id))
export const tagSensorIn = (c: Catalogue, raw: string): JsonText => inMemory('TagSensor', raw, (id) => c.tagSensorText(id))
export function tagIn (c: Catalogue, key: string): JsonText {
  const id = recordId(key)
  const tag = id !== null ? c.tags.get(id) : c.tagByName(key)
  return found(tag === undefined ? undefined : c.tagText(tag.id), 'Tag', id ?? key)
}
