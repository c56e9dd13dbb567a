import { findDeviceSensors, type Handle, type ReadingRow, type ReadingsWriter, type WriteResult } from '@esp/db'
import { type DeviceAccess, findDevicesByToken } from '../devices/device-access.js'
import { ApiError, errors, type FieldErrors } from '../errors.js'
import type { IngestStatusLog } from '../devices/device-messages.js'
import { noneSkipped, type Skipped } from './skipped.js'
import { addProblem, type BatchLimits, countValues, MAX_PROBLEMS, parseBatch, type ParsedBatch, type PostedValue, postedPath, type RejectionReason, type ValuePath } from './batch.js'
import { type Calibration, calibrationFor } from './calibration.js'

/** What a device's readings need after they are stored: live subscribers, forwarding. */
export interface StoredReadings {
  device: IngestDevice
  inserted: ReadingRow[]
}

export interface IngestContext {
  database: Handle
  /** group commit of all writes of this process (@esp/db ReadingsWriter) */
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

/**
 * Sensor ids and keys of several devices in one query: a numeric ref is a sensor id; a text ref is
 * the device kit's sensor key first, then a sensor's default key (contract: Kit; behaviour.md §6.2).
 * The refs are pooled across devices, so a batch of messages costs one round trip.
 */
export async function resolveSensors (h: Handle, devices: Pick<IngestDevice, 'id' | 'kitId'>[], values: Pick<PostedValue, 'ref'>[]): Promise<Map<number, SensorMap>> {
  const ids = [...new Set(values.map((v) => v.ref).filter((r): r is number => typeof r === 'number'))]
  const keys = [...new Set(values.map((v) => v.ref).filter((r): r is string => typeof r === 'string'))]
  const byDevice = new Map<number, SensorMap>(devices.map((d) => [d.id, new Map()]))
  if (values.length === 0 || devices.length === 0) return byDevice
  const rows = await findDeviceSensors(h, devices, ids, keys)
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

export { noneSkipped, type SensorRef, type Skipped, type SkippedView, skippedView } from './skipped.js'

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

/**
 * What a message carries: the contract's `data` array (HTTP, MQTT, /add); values already parsed
 * and bounds-checked, named in problems by `pathOf` (a step of the CSV import); or, for a payload
 * its topic's reader could not read, why it is refused (once its token names a device, so that
 * the device's owner hears of it).
 */
export type MessageBody =
  | { data: unknown }
  | { values: PostedValue[], pathOf: ValuePath }
  | { refused: { reason: RejectionReason, message: string } }

/** A message of readings and its device: found already (HTTP, /add, the import), or named by its MQTT token. */
export type ReadingsMessage = MessageBody & ({ device: IngestDevice } | { token: string })

export type StoreOutcome =
  | { status: 'stored', device: IngestDevice, result: WriteResult, skipped: Skipped }
  | { status: 'unknown_device' }
  | { status: 'rejected', reason: RejectionReason, problems: FieldErrors }

export interface StoreOptions {
  /**
   * Note what was not stored (a message refused whole, values of unknown sensors) in the
   * device's ingest status (ctx.status), for callers that answer nobody (MQTT).
   */
  noteStatus?: boolean
}

const NO_VALUES: PostedValue[] = []

/** A message's values checked against the limits, or why it is refused. */
function parseMessage (ctx: IngestContext, message: MessageBody, now: Date): { batch: ParsedBatch, pathOf: ValuePath } {
  if ('refused' in message) return { batch: { values: NO_VALUES, problems: { payload: [message.refused.message] }, reason: message.refused.reason }, pathOf: postedPath }
  if ('values' in message) return { batch: { values: message.values, problems: {}, reason: null }, pathOf: message.pathOf }
  if (countValues(message.data) > ctx.limits.maxValues) {
    return { batch: { values: NO_VALUES, problems: { data: [`may carry at most ${ctx.limits.maxValues} values`] }, reason: 'too_many_values' }, pathOf: postedPath }
  }
  return { batch: parseBatch(message.data, ctx.limits, now), pathOf: postedPath }
}

/**
 * The one ingest path of readings, for HTTP POST, /add, MQTT and the CSV import: finds the
 * devices of messages named by token (one query for all), checks each message (an oversized one
 * is refused before any per-item work; times within the bounds of timeProblem), resolves the
 * sensors of every device at once (one query), builds calibrated rows (buildRows), notes what
 * was not stored (with `noteStatus`), and writes every accepted message through the group
 * commit, the one batching layer: messages arriving while a transaction is in flight share the
 * next one. Validation is per message: a bad message is refused whole and never fails its
 * neighbours; values of unknown sensors are skipped and the rest stored. Resolves, one outcome
 * per message in order, only after the commit: an acknowledged reading is durable. Rejects only
 * when the database fails, so the caller withholds the acknowledgement.
 */
export async function storeMessages (ctx: IngestContext, messages: readonly ReadingsMessage[], options: StoreOptions = {}): Promise<StoreOutcome[]> {
  const tokens = [...new Set(messages.flatMap((m) => 'token' in m ? [m.token] : []))]
  const byToken = tokens.length === 0 ? new Map<string, IngestDevice>() : await findDevicesByToken(ctx.database, tokens)
  const now = ctx.now()
  const parsed = messages.map((message): { device: undefined } | { device: IngestDevice, batch: ParsedBatch, pathOf: ValuePath } => {
    const device = 'device' in message ? message.device : byToken.get(message.token)
    return device === undefined ? { device } : { device, ...parseMessage(ctx, message, now) }
  })
  const devices = new Map<number, IngestDevice>()
  const values: PostedValue[] = []
  for (const p of parsed) {
    if (p.device === undefined || p.batch.values.length === 0) continue
    devices.set(p.device.id, p.device)
    for (const value of p.batch.values) values.push(value)
  }
  const sensors = await resolveSensors(ctx.database, [...devices.values()], values)
  const outcomes: StoreOutcome[] = []
  const accepted: { index: number, device: IngestDevice, rows: ReadingRow[], skipped: Skipped }[] = []
  parsed.forEach((p, index) => {
    if (p.device === undefined) { outcomes.push({ status: 'unknown_device' }); return }
    const checked = checkBatch(p.device.id, p.batch, sensors.get(p.device.id) ?? new Map(), p.pathOf)
    if (checked.status === 'rejected') {
      // Acknowledged (sending it again cannot help), so its owner is told instead (issue 35).
      if (options.noteStatus === true) ctx.status?.rejected(p.device.id, now, checked.reason, checked.problems)
      outcomes.push(checked)
      return
    }
    if (options.noteStatus === true && checked.skipped.count > 0) ctx.status?.skipped(p.device.id, now, checked.skipped)
    // A placeholder until the commit fills it in.
    outcomes.push({ status: 'unknown_device' })
    accepted.push({ index, device: p.device, rows: checked.rows, skipped: checked.skipped })
  })
  if (accepted.length === 0) return outcomes
  const results = await ctx.writer.writeAll(accepted.map((a) => a.rows))
  accepted.forEach(({ index, device, skipped }, i) => {
    const result = results[i] ?? { stored: 0, duplicates: 0, inserted: [] }
    if (result.inserted.length > 0) ctx.onStored?.({ device, inserted: result.inserted })
    outcomes[index] = { status: 'stored', device, result, skipped }
  })
  return outcomes
}

export type IngestOutcome =
  | { status: 'stored', result: WriteResult, skipped: Skipped }
  | { status: 'rejected', reason: RejectionReason, problems: FieldErrors }

/**
 * One batch of one device through storeMessages. Known sensors are stored and unknown ones
 * skipped (in the outcome: a caller that answers names them, one that does not notes them in the
 * device's ingest status); any malformed item refuses the batch with every problem named, and
 * nothing is written. Resolves only after the commit: an acknowledged reading is durable.
 */
export async function ingestBatch (ctx: IngestContext, device: IngestDevice, data: unknown): Promise<IngestOutcome> {
  const [outcome] = await storeMessages(ctx, [{ device, data }])
  if (outcome === undefined || outcome.status === 'unknown_device') throw new Error('a message with its device has an outcome')
  return outcome.status === 'stored' ? { status: 'stored', result: outcome.result, skipped: outcome.skipped } : outcome
}

/** ingestBatch for a caller that answers (HTTP POST): a refused batch is the 413 or the 422 naming every problem. */
export async function ingestReadings (ctx: IngestContext, device: IngestDevice, data: unknown): Promise<WriteResult & { skipped: Skipped }> {
  const outcome = await ingestBatch(ctx, device, data)
  if (outcome.status === 'stored') return { ...outcome.result, skipped: outcome.skipped }
  if (outcome.reason === 'too_many_values') throw tooManyValues(ctx.limits.maxValues)
  throw errors.unprocessable(outcome.problems)
}
