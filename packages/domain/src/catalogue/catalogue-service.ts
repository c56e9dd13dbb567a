import {
  deleteTagRow, deleteTagSensorRow, findTagRow, type Handle, insertMeasurement, insertSensor, insertTag, insertTagSensor, isPgCode, kitById, type KitRow,
  measurementById, measurementExists, type MeasurementRow, PgCode, sensorById, sensorExists, type SensorRow, tagNameTaken, type TagRow, tagSensorById,
  type TagSensorRow, updateMeasurement, updateSensor, updateTag, updateTagSensor
} from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { compileCalibration } from '../readings/calibration.js'
import { asBody, BodyReader } from '../validation/body-reader.js'
import { recordId, recordIdOr404 } from '../validation/record-id.js'
import type { Catalogue, JsonText } from './reference-data.js'

export { presentMeasurement, presentSensor, presentTag, presentTagSensor } from './reference-data.js'
// The lists' field maps and pages are packages/db's (queries/catalogue.ts).
export { kitFilters, listKits, listMeasurements, listSensors, listTags, listTagSensors, measurementFilters, sensorFilters, tagFilters, tagSensorFilters } from '@esp/db'

/** Catalogue writes are for admins (behaviour.md §3: admin policy); reads are public. */
export function assertAdmin (viewer: Viewer | null): void {
  if (viewer === null) throw errors.unauthorized()
  if (!isAdmin(viewer)) throw errors.forbidden()
}

async function one<T> (row: Promise<T | undefined>, what: string, key: string | number): Promise<T> {
  return found(await row, what, key)
}

function found<T> (value: T | undefined, what: string, key: string | number): T {
  if (value === undefined) throw errors.notFound(what, key)
  return value
}

// ---------------------------------------------------------------- measurements

export const findMeasurement = async (h: Handle, raw: string): Promise<MeasurementRow> =>
  await one(measurementById(h, recordIdOr404('Measurement', raw)), 'Measurement', Number(raw))

// ---------------------------------------------------------------- sensors

export const findSensor = async (h: Handle, raw: string): Promise<SensorRow> =>
  await one(sensorById(h, recordIdOr404('Sensor', raw)), 'Sensor', Number(raw))

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

async function assertExists (h: Handle, exists: (h: Handle, id: number) => Promise<boolean>, id: number | null | undefined, field: string, fields: BodyReader): Promise<void> {
  if (id === null || id === undefined) return
  if (!await exists(h, id)) fields.add(field, 'does not exist')
}

export async function writeSensor (h: Handle, raw: unknown, viewer: Viewer | null, existing?: SensorRow): Promise<SensorRow> {
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
  await assertExists(h, measurementExists, values.measurementId, 'measurement_id', f)
  await assertExists(h, sensorExists, values.parentId, 'parent_id', f)
  f.check()
  if (existing === undefined) return await one(insertSensor(h, { ...values, name: values.name ?? '' }), 'Sensor', 0)
  return await one(updateSensor(h, existing.id, { ...values, updatedAt: new Date() }), 'Sensor', existing.id)
}

export async function writeMeasurement (h: Handle, raw: unknown, viewer: Viewer | null, existing?: MeasurementRow): Promise<MeasurementRow> {
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
    ? await one(insertMeasurement(h, { ...values, name: values.name ?? '' }), 'Measurement', 0)
    : await one(updateMeasurement(h, existing.id, { ...values, updatedAt: new Date() }), 'Measurement', existing.id))
}

// ---------------------------------------------------------------- kits

export const findKit = async (h: Handle, raw: string): Promise<KitRow> =>
  await one(kitById(h, recordIdOr404('Kit', raw)), 'Kit', Number(raw))

// ---------------------------------------------------------------- tags and tag sensors

/** A tag by id or by its exact name (the established platform's friendly id). */
export async function findTag (h: Handle, key: string): Promise<TagRow> {
  const id = recordId(key)
  return await one(findTagRow(h, id !== null ? { id } : { name: key }), 'Tag', id ?? key)
}

export async function writeTag (h: Handle, raw: unknown, viewer: Viewer | null, existing?: TagRow): Promise<TagRow> {
  assertAdmin(viewer)
  const f = new BodyReader(asBody(raw), existing === undefined)
  const values = defined({ name: f.text('name', { max: 255, required: true }) ?? undefined, description: f.text('description') })
  if (values.name !== undefined) {
    if (await tagNameTaken(h, values.name, existing?.id)) f.add('name', 'has already been taken')
  }
  f.check()
  return await uniqueName(async () => existing === undefined
    ? await one(insertTag(h, { ...values, name: values.name ?? '' }), 'Tag', 0)
    : await one(updateTag(h, existing.id, { ...values, updatedAt: new Date() }), 'Tag', existing.id))
}

/** Deleting a tag removes it from every device (the join rows cascade). */
export async function deleteTag (h: Handle, tag: TagRow, viewer: Viewer | null): Promise<void> {
  assertAdmin(viewer)
  await deleteTagRow(h, tag.id)
}

export const findTagSensor = async (h: Handle, raw: string): Promise<TagSensorRow> =>
  await one(tagSensorById(h, recordIdOr404('TagSensor', raw)), 'TagSensor', Number(raw))

export async function writeTagSensor (h: Handle, raw: unknown, viewer: Viewer | null, existing?: TagSensorRow): Promise<TagSensorRow> {
  assertAdmin(viewer)
  const f = new BodyReader(asBody(raw), existing === undefined)
  const values = defined({ name: f.text('name', { max: 255, required: true }) ?? undefined, description: f.text('description') })
  f.check()
  return await uniqueName(async () => existing === undefined
    ? await one(insertTagSensor(h, { ...values, name: values.name ?? '' }), 'TagSensor', 0)
    : await one(updateTagSensor(h, existing.id, { ...values, updatedAt: new Date() }), 'TagSensor', existing.id))
}

export async function deleteTagSensor (h: Handle, row: TagSensorRow, viewer: Viewer | null): Promise<void> {
  assertAdmin(viewer)
  await deleteTagSensorRow(h, row.id)
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
