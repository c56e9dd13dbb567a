import { and, asc, eq, inArray, ne, sql, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import { deviceTags, type Executor, isPgCode, kits, kitSensors, measurements, PgCode, sensors, sensorTags, tags, tagSensors } from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import type { FilterSpec } from '../lists/filter-compiler.js'
import { compileCalibration } from '../readings/calibration.js'
import { formatTimestamp } from '../time.js'
import { asBody, BodyReader } from '../validation/body-reader.js'
import { recordId, recordIdOr404 } from '../validation/record-id.js'

type SensorRow = typeof sensors.$inferSelect
type MeasurementRow = typeof measurements.$inferSelect
type KitRow = typeof kits.$inferSelect
type TagRow = typeof tags.$inferSelect
type TagSensorRow = typeof tagSensors.$inferSelect

/** Catalogue writes are for admins (behaviour.md §3: admin policy); reads are public. */
export function assertAdmin (viewer: Viewer | null): void {
  if (viewer === null) throw errors.unauthorized()
  if (!isAdmin(viewer)) throw errors.forbidden()
}

async function one<T> (rows: Promise<T[]>, what: string, key: string | number): Promise<T> {
  const [row] = await rows
  if (row === undefined) throw errors.notFound(what, key)
  return row
}

// ---------------------------------------------------------------- measurements

export const measurementFilters: FilterSpec = {
  id: { column: measurements.id, type: 'integer' },
  uuid: { column: measurements.uuid, type: 'uuid' },
  name: { column: measurements.name, type: 'text' },
  created_at: { column: measurements.createdAt, type: 'timestamp' },
  updated_at: { column: measurements.updatedAt, type: 'timestamp' }
}

export const presentMeasurement = (m: MeasurementRow) => ({
  id: m.id,
  uuid: m.uuid,
  name: m.name,
  description: m.description,
  definition: m.definition,
  created_at: formatTimestamp(m.createdAt),
  updated_at: formatTimestamp(m.updatedAt)
})

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

export interface SensorExtras { measurements: Map<number, MeasurementRow>, tags: Map<number, string[]> }

/** Measurements and tag names of many sensors in two queries. */
export async function sensorExtras (db: Executor, rows: SensorRow[]): Promise<SensorExtras> {
  const measurementIds = [...new Set(rows.map((s) => s.measurementId).filter((m): m is number => m !== null))]
  const ids = rows.map((s) => s.id)
  const [ms, ts] = await Promise.all([
    measurementIds.length === 0 ? Promise.resolve([]) : db.select().from(measurements).where(inArray(measurements.id, measurementIds)),
    ids.length === 0
      ? Promise.resolve([])
      : db.select({ sensorId: sensorTags.sensorId, name: tagSensors.name }).from(sensorTags)
        .innerJoin(tagSensors, eq(tagSensors.id, sensorTags.tagSensorId)).where(inArray(sensorTags.sensorId, ids)).orderBy(asc(tagSensors.name))
  ])
  const tagMap = new Map<number, string[]>()
  for (const t of ts) tagMap.set(t.sensorId, [...(tagMap.get(t.sensorId) ?? []), t.name])
  return { measurements: new Map(ms.map((m) => [m.id, m])), tags: tagMap }
}

/** Contract: Sensor, with the embedded measurement (behaviour.md §13 key order); a device's sensors add their readings to it. */
/** Takes what the representation shows, so a device's sensors read without their equations pass too. */
export function presentSensor (s: Omit<SensorRow, 'equation' | 'reverseEquation'>, m: Pick<MeasurementRow, 'id' | 'uuid' | 'name' | 'description' | 'definition'> | null | undefined, tags: string[]) {
  return {
    id: s.id,
    uuid: s.uuid,
    parent_id: s.parentId,
    ancestry: s.parentId === null ? null : String(s.parentId),
    name: s.name,
    description: s.description,
    unit: s.unit,
    tags,
    datasheet: s.datasheet,
    unit_definition: s.unitDefinition,
    measurement_id: s.measurementId,
    default_key: s.defaultKey,
    created_at: formatTimestamp(s.createdAt),
    updated_at: formatTimestamp(s.updatedAt),
    measurement: m === undefined || m === null ? null : { id: m.id, uuid: m.uuid, name: m.name, description: m.description, definition: m.definition }
  }
}

export const presentSensorWith = (s: SensorRow, extras: SensorExtras) =>
  presentSensor(s, s.measurementId === null ? null : extras.measurements.get(s.measurementId), extras.tags.get(s.id) ?? [])

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

/** The older form's kits, each with its sensors (and their keys) in blueprint order: three queries for a page. */
export async function presentKits (db: Executor, rows: KitRow[]) {
  const ids = rows.map((k) => k.id)
  const links = ids.length === 0
    ? []
    : await db.select({ kitId: kitSensors.kitId, key: kitSensors.key, sensor: sensors }).from(kitSensors)
      .innerJoin(sensors, eq(sensors.id, kitSensors.sensorId)).where(inArray(kitSensors.kitId, ids)).orderBy(asc(kitSensors.kitId), asc(kitSensors.position))
  const extras = await sensorExtras(db, links.map((l) => l.sensor))
  return rows.map((k) => ({
    id: k.id,
    uuid: k.uuid,
    slug: k.slug,
    name: k.name,
    description: k.description,
    created_at: formatTimestamp(k.createdAt),
    updated_at: formatTimestamp(k.updatedAt),
    sensors: links.filter((l) => l.kitId === k.id).map((l) => ({ ...presentSensorWith(l.sensor, extras), key: l.key }))
  }))
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

export const presentTag = (t: TagRow) => ({
  id: t.id, uuid: t.uuid, name: t.name, description: t.description, created_at: formatTimestamp(t.createdAt), updated_at: formatTimestamp(t.updatedAt)
})

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

export const presentTagSensor = (t: TagSensorRow) => ({
  id: t.id, name: t.name, description: t.description, created_at: formatTimestamp(t.createdAt), updated_at: formatTimestamp(t.updatedAt)
})

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
