import type { ReadingRow, Sql, WriteResult } from '@esp/db'
import type { DeviceAccess } from '../devices/device-access.js'
import { ApiError, errors, type FieldErrors } from '../errors.js'
import { addProblem, type BatchLimits, countValues, parseBatch, type PostedValue, postedPath, type ValuePath } from './batch.js'
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

/**
 * Checked, resolved values become calibrated rows; unknown sensors and values without a finite
 * calibrated number are added to `problems`, named by `pathOf`. A (sensor, time) repeated within
 * the batch is left to the write path, which keeps the first and counts the others as duplicates,
 * as it does across batches.
 */
export function buildRows (deviceId: number, values: PostedValue[], sensors: SensorMap, problems: FieldErrors, pathOf: ValuePath = postedPath): ReadingRow[] {
  const rows: ReadingRow[] = []
  for (const value of values) {
    const sensor = sensors.get(value.ref)
    if (sensor === undefined) { addProblem(problems, `${pathOf(value)}.id`, `is not a known sensor (${JSON.stringify(value.ref)})`); continue }
    const calibrated = sensor.calibrate === null ? value.raw : sensor.calibrate(value.raw)
    if (!Number.isFinite(calibrated)) { addProblem(problems, `${pathOf(value)}.value`, 'has no finite calibrated value'); continue }
    rows.push({ deviceId, sensorId: sensor.id, recordedAt: value.recordedAt, value: calibrated, rawValue: value.raw })
  }
  return rows
}

/**
 * Validates a whole batch, resolves and calibrates it, and stores it through the one write path.
 * Any bad item rejects the batch with every problem named (422) and nothing written. Resolves
 * only after the commit: an acknowledged reading is durable.
 */
export async function ingestReadings (ctx: IngestContext, device: IngestDevice, data: unknown): Promise<WriteResult> {
  if (countValues(data) > ctx.limits.maxValues) throw tooManyValues(ctx.limits.maxValues)
  const { values, problems } = parseBatch(data, ctx.limits, ctx.now())
  const sensors = (await resolveSensors(ctx.database.sql, [device], values)).get(device.id) ?? new Map()
  const rows = buildRows(device.id, values, sensors, problems)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  const result = await ctx.writer.write(rows)
  if (result.inserted.length > 0) ctx.onStored?.({ device, inserted: result.inserted })
  return result
}
