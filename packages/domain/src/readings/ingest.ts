import type { Database, ReadingRow, WriteResult } from '@esp/db'
import { ApiError, errors, type FieldErrors } from '../errors.js'
import { type BatchLimits, countValues, MAX_PROBLEMS, parseBatch, type PostedValue } from './batch.js'
import { calibrationFor } from './calibration.js'
import type { ReadingsWriter } from './writer.js'

export interface IngestContext {
  database: Database
  /** group commit of all writes of this process */
  writer: ReadingsWriter
  limits: BatchLimits
  now: () => Date
}

export interface IngestDevice { id: number, kitId: number | null }

interface ResolvedSensor { id: number, equation: string | null }

/**
 * Sensor ids and keys in one query: a numeric ref is a sensor id; a text ref is the device kit's
 * sensor key first, then a sensor's default key (contract: Kit; behaviour.md §6.2).
 */
async function resolveSensors (ctx: IngestContext, device: IngestDevice, values: PostedValue[]): Promise<Map<number | string, ResolvedSensor>> {
  const ids = [...new Set(values.map((v) => v.ref).filter((r): r is number => typeof r === 'number'))]
  const keys = [...new Set(values.map((v) => v.ref).filter((r): r is string => typeof r === 'string'))]
  const rows = await ctx.database.sql<{ id: number, default_key: string | null, kit_key: string | null, equation: string | null }[]>`
    select s.id, s.default_key, ks.key as kit_key, c.equation
    from sensors s
    left join kit_sensors ks on ks.sensor_id = s.id and ks.kit_id = ${device.kitId}
    left join components c on c.sensor_id = s.id and c.device_id = ${device.id}
    where s.id = any(${ids}::int[]) or ks.key = any(${keys}::text[]) or s.default_key = any(${keys}::text[])
    order by s.id`
  const resolved = new Map<number | string, ResolvedSensor>()
  for (const row of rows) {
    const sensor = { id: row.id, equation: row.equation }
    if (ids.includes(row.id)) resolved.set(row.id, sensor)
    if (row.kit_key !== null && keys.includes(row.kit_key)) resolved.set(row.kit_key, sensor)
  }
  for (const row of rows) {
    if (row.default_key !== null && keys.includes(row.default_key) && !resolved.has(row.default_key)) resolved.set(row.default_key, { id: row.id, equation: row.equation })
  }
  return resolved
}

export const tooManyValues = (max: number): ApiError =>
  new ApiError({ code: 'ESP_TOO_MANY_READINGS', id: 'payload_too_large', statusCode: 413, message: `A batch may carry at most ${max} values; send the readings in several batches` })

/**
 * Validates a whole batch, resolves and calibrates it, and stores it through the one write path.
 * Any bad item rejects the batch with every problem named (422) and nothing written. Resolves
 * only after the commit: an acknowledged reading is durable.
 */
export async function ingestReadings (ctx: IngestContext, device: IngestDevice, data: unknown): Promise<WriteResult & { batchDuplicates: number }> {
  if (countValues(data) > ctx.limits.maxValues) throw tooManyValues(ctx.limits.maxValues)
  const { values, problems } = parseBatch(data, ctx.limits, ctx.now())
  const resolved = values.length === 0 ? new Map<number | string, ResolvedSensor>() : await resolveSensors(ctx, device, values)
  const rows: ReadingRow[] = []
  const seen = new Set<string>()
  let batchDuplicates = 0
  const report = (path: string, message: string): void => {
    if (Object.keys(problems).length < MAX_PROBLEMS) (problems[path] ??= []).push(message)
  }
  for (const value of values) {
    const sensor = resolved.get(value.ref)
    if (sensor === undefined) { report(`${value.path}.id`, `is not a known sensor (${JSON.stringify(value.ref)})`); continue }
    const calibrate = calibrationFor(sensor.equation)
    const calibrated = calibrate === null ? value.raw : calibrate(value.raw)
    if (!Number.isFinite(calibrated)) { report(`${value.path}.value`, 'has no finite calibrated value'); continue }
    // Within a batch, as across batches, the first value for (sensor, time) wins.
    const key = `${sensor.id}:${value.recordedAt.getTime()}`
    if (seen.has(key)) { batchDuplicates++; continue }
    seen.add(key)
    rows.push({ deviceId: device.id, sensorId: sensor.id, recordedAt: value.recordedAt, value: calibrated, rawValue: value.raw })
  }
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems as FieldErrors)
  const result = await ctx.writer.write(rows)
  return { ...result, duplicates: result.duplicates + batchDuplicates, batchDuplicates }
}
