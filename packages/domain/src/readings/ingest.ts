import type { ReadingRow, Sql, WriteResult } from '@esp/db'
import type { DeviceAccess } from '../devices/device-access.js'
import { ApiError, errors, type FieldErrors } from '../errors.js'
import type { IngestStatusLog } from '../devices/device-messages.js'
import { addProblem, type BatchLimits, countValues, MAX_PROBLEMS, parseBatch, type ParsedBatch, type PostedValue, postedPath, type RejectionReason, type ValuePath } from './batch.js'
import { type Calibration, calibrationFor } from './calibration.js'
import type { ReadingsWriter } from './writer.js'

/** What a device's readings need after they are stored: live subscribers, forwarding. */
export interface StoredReadings {
  device: IngestDevice
  inserted: ReadingRow[]
}

export interface IngestContext {
  database: { sql: Sql }
  /** group commit of all writes of this process */
  writer: ReadingsWriter
  limits: BatchLimits
  now: () => Date
  /** called after each commit with what was newly stored; must not throw or block */
  onStored?: ((stored: StoredReadings) => void) | undefined
  /** where what a device sent but was not stored is noted for its owner (ingest status) */
  status?: IngestStatusLog | undefined
}

/** A device as the write path needs it: what the access checks already read. */
export type IngestDevice = DeviceAccess

export interface ResolvedSensor {
  id: number
  /** the component's equation compiled once per batch, null when values are stored as posted */
  calibrate: Calibration | null
}
export type SensorMap = Map<number | string, ResolvedSensor>

interface SensorRow { device_id: number, id: number, default_key: string | null, kit_key: string | null, equation: string | null }

/**
 * Sensor ids and keys of several devices in one query: a numeric ref is a sensor id; a text ref is
 * the device kit's sensor key first, then a sensor's default key (contract: Kit; behaviour.md §6.2).
 * The refs are pooled across devices, so a batch of messages costs one round trip.
 */
export async function resolveSensors (sql: Sql, devices: Pick<IngestDevice, 'id' | 'kitId'>[], values: Pick<PostedValue, 'ref'>[]): Promise<Map<number, SensorMap>> {
  const ids = [...new Set(values.map((v) => v.ref).filter((r): r is number => typeof r === 'number'))]
  const keys = [...new Set(values.map((v) => v.ref).filter((r): r is string => typeof r === 'string'))]
  const byDevice = new Map<number, SensorMap>(devices.map((d) => [d.id, new Map()]))
  if (values.length === 0 || devices.length === 0) return byDevice
  const rows = await sql<SensorRow[]>`
    select d.id as device_id, s.id, s.default_key, ks.key as kit_key, c.equation
    from unnest(${devices.map((d) => d.id)}::int[], ${devices.map((d) => d.kitId)}::int[]) as d(id, kit_id)
    join sensors s on true
    left join kit_sensors ks on ks.sensor_id = s.id and ks.kit_id = d.kit_id
    left join components c on c.sensor_id = s.id and c.device_id = d.id
    where s.id = any(${ids}::int[]) or ks.key = any(${keys}::text[]) or s.default_key = any(${keys}::text[])
    order by d.id, s.id`
  const idSet = new Set(ids)
  const keySet = new Set(keys)
  for (const row of rows) {
    const resolved = byDevice.get(row.device_id)
    if (resolved === undefined) continue
    const sensor = { id: row.id, calibrate: calibrationFor(row.equation) }
    if (idSet.has(row.id)) resolved.set(row.id, sensor)
    if (row.kit_key !== null && keySet.has(row.kit_key)) resolved.set(row.kit_key, sensor)
  }
  // A kit's key outranks another sensor's default key, whatever the row order.
  for (const row of rows) {
    const resolved = byDevice.get(row.device_id)
    if (resolved === undefined || row.default_key === null || !keySet.has(row.default_key) || resolved.has(row.default_key)) continue
    resolved.set(row.default_key, { id: row.id, calibrate: calibrationFor(row.equation) })
  }
  return byDevice
}

export const tooManyValues = (max: number): ApiError =>
  new ApiError({ code: 'ESP_TOO_MANY_READINGS', id: 'payload_too_large', statusCode: 413, message: `A batch may carry at most ${max} values; send the readings in several batches` })

/** A sensor id, or a kit or default key, as posted. */
export type SensorRef = number | string

/**
 * Values left out because their sensor is not known (not in the catalogue, or a key neither the
 * kit nor any sensor has), while the rest of their batch is stored: kits gain sensors through
 * firmware updates before the catalogue does (clients.md §1.3.1). Bounded: the count is exact,
 * the distinct sensors and the places are the first MAX_PROBLEMS.
 */
export interface Skipped {
  count: number
  sensors: Set<SensorRef>
  items: Array<{ path: string, sensor: SensorRef }>
}

export const noneSkipped = (): Skipped => ({ count: 0, sensors: new Set(), items: [] })

/** The answer's and the import's `skipped` (contract: POST readings). */
export interface SkippedView { count: number, unknown_sensors: SensorRef[], items: Array<{ path: string, sensor: SensorRef }> }

export const skippedView = (skipped: Skipped): SkippedView => ({ count: skipped.count, unknown_sensors: [...skipped.sensors], items: skipped.items })

/**
 * Checked, resolved values become calibrated rows: the one rule for every path that writes
 * readings. A value of an unknown sensor is skipped and added to `skipped` (never silently); one
 * without a finite calibrated number is a problem that refuses the batch, named by `pathOf`.
 * A negative zero is stored as 0 (value and raw value): -0 and 0 are one reading, and the exports
 * must not print them apart. A (sensor, time) repeated within the batch is left to the write path,
 * which keeps the first and counts the others as duplicates, as it does across batches.
 */
export function buildRows (deviceId: number, values: PostedValue[], sensors: SensorMap, problems: FieldErrors, skipped: Skipped, pathOf: ValuePath = postedPath): ReadingRow[] {
  const rows: ReadingRow[] = []
  for (const value of values) {
    const sensor = sensors.get(value.ref)
    if (sensor === undefined) {
      skipped.count++
      if (skipped.sensors.size < MAX_PROBLEMS) skipped.sensors.add(value.ref)
      if (skipped.items.length < MAX_PROBLEMS) skipped.items.push({ path: pathOf(value), sensor: value.ref })
      continue
    }
    // `x === 0` holds for -0 too: both become the one 0.
    const raw = value.raw === 0 ? 0 : value.raw
    let calibrated = sensor.calibrate === null ? raw : sensor.calibrate(raw)
    if (!Number.isFinite(calibrated)) { addProblem(problems, `${pathOf(value)}.value`, 'has no finite calibrated value'); continue }
    if (calibrated === 0) calibrated = 0
    rows.push({ deviceId, sensorId: sensor.id, recordedAt: value.recordedAt, value: calibrated, rawValue: raw })
  }
  return rows
}

/** A batch checked and resolved: its rows to write and what was skipped, or why it is refused whole. */
export type CheckedBatch =
  | { status: 'accepted', rows: ReadingRow[], skipped: Skipped }
  | { status: 'rejected', reason: RejectionReason, problems: FieldErrors }

/**
 * A parsed batch through buildRows. Any problem refuses it whole (nothing of it is written): the
 * reason of parseBatch's first problem, or `invalid` for a value without a calibrated number.
 */
export function checkBatch (deviceId: number, parsed: ParsedBatch, sensors: SensorMap, pathOf: ValuePath = postedPath): CheckedBatch {
  const skipped = noneSkipped()
  const rows = buildRows(deviceId, parsed.values, sensors, parsed.problems, skipped, pathOf)
  if (parsed.reason !== null) return { status: 'rejected', reason: parsed.reason, problems: parsed.problems }
  if (Object.keys(parsed.problems).length > 0) return { status: 'rejected', reason: 'invalid', problems: parsed.problems }
  return { status: 'accepted', rows, skipped }
}

export type IngestOutcome =
  | { status: 'stored', result: WriteResult, skipped: Skipped }
  | { status: 'rejected', reason: RejectionReason, problems: FieldErrors }

/**
 * Validates a whole batch, resolves and calibrates it, and stores it through the one write path.
 * Known sensors are stored and unknown ones skipped (in the outcome: a caller that answers names
 * them, one that does not notes them in the device's ingest status); any malformed item refuses
 * the batch with every problem named, and nothing is written. Resolves only after the commit: an
 * acknowledged reading is durable.
 */
export async function ingestBatch (ctx: IngestContext, device: IngestDevice, data: unknown): Promise<IngestOutcome> {
  if (countValues(data) > ctx.limits.maxValues) return { status: 'rejected', reason: 'too_many_values', problems: { data: [`may carry at most ${ctx.limits.maxValues} values`] } }
  const now = ctx.now()
  const parsed = parseBatch(data, ctx.limits, now)
  const sensors = (await resolveSensors(ctx.database.sql, [device], parsed.values)).get(device.id) ?? new Map()
  const checked = checkBatch(device.id, parsed, sensors)
  if (checked.status === 'rejected') return checked
  const result = await ctx.writer.write(checked.rows)
  if (result.inserted.length > 0) ctx.onStored?.({ device, inserted: result.inserted })
  return { status: 'stored', result, skipped: checked.skipped }
}

/** ingestBatch for a caller that answers: a refused batch is the 413 or the 422 naming every problem. */
export async function ingestReadings (ctx: IngestContext, device: IngestDevice, data: unknown): Promise<WriteResult & { skipped: Skipped }> {
  const outcome = await ingestBatch(ctx, device, data)
  if (outcome.status === 'stored') return { ...outcome.result, skipped: outcome.skipped }
  if (outcome.reason === 'too_many_values') throw tooManyValues(ctx.limits.maxValues)
  throw errors.unprocessable(outcome.problems)
}
