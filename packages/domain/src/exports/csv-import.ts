import { inTransaction, mergeIngestStatus, pgDate, pgDateOrNull, type Handle, type Sql } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { assertCanWrite, type DeviceAccess, findDeviceAccess } from '../devices/device-access.js'
import { ApiError, errors, type FieldErrors } from '../errors.js'
import { recordId } from '../validation/record-id.js'
import type { JobSender } from '../jobs.js'
import { formatTimestamp } from '../time.js'
import { addProblem, asNumber, MAX_PROBLEMS, type BatchLimits, OLDEST_READING, type PostedValue, timeProblem, type ValuePath } from '../readings/batch.js'
import { buildRows, noneSkipped, resolveSensors, type SensorMap, type Skipped, skippedView, type SkippedView } from '../readings/ingest.js'
import type { ReadingsWriter } from '../readings/writer.js'
import { parseRecordedAt } from '../readings/time-params.js'

/**
 * Historical import of the firmware's SD-card CSV (clients.md W25): header lines (short titles,
 * units, titles, then platform sensor ids), then one line per time: `2026-03-01T22:14:00Z,95,...`.
 * The header is every line before the first one that starts with a time; its last line holds the
 * sensor ids. A column without an id is ignored, as the web upload ignores it; a column whose id
 * the catalogue does not know is skipped and reported (`skipped`), as every path skips one.
 */
export interface ParsedCsv {
  /** the sensor id of each value column, null for an ignored one */
  sensorIds: (number | null)[]
  /** `line` is the file's line number (from 1), for messages */
  rows: { line: number, recordedAt: Date, values: (number | null)[] }[]
  valueCount: number
}

/** The time bounds of posted readings (OLDEST_READING and READINGS_MAX_FUTURE_SECONDS), as every path applies them. */
export type ImportLimits = Pick<BatchLimits, 'maxFutureMs' | 'minTime'>

const cells = (line: string): string[] => line.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1').trim())

/** Parses and checks a whole file; every problem is named by line (and column), up to 100. */
export function parseSdCsv (text: string, limits: ImportLimits, now: Date): { parsed: ParsedCsv, problems: FieldErrors } {
  const problems: FieldErrors = {}
  const add = (key: string, message: string): void => { addProblem(problems, key, message) }
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/)
  const parsed: ParsedCsv = { sensorIds: [], rows: [], valueCount: 0 }
  const latest = now.getTime() + limits.maxFutureMs
  let inHeader = true
  lines.forEach((line, index) => {
    if (line.trim() === '') return
    const key = `line ${index + 1}`
    const row = cells(line)
    const recordedAt = parseRecordedAt(row[0])
    if (inHeader && recordedAt === null) {
      // Titles and units come first; only the last header line, the ids, counts.
      parsed.sensorIds = row.slice(1).map((cell) => { const id = recordId(cell); return id !== null && id > 0 ? id : null })
      delete problems.ids
      row.slice(1).forEach((cell, i) => { if (cell !== '' && parsed.sensorIds[i] === null) add('ids', `${key}, column ${i + 2}: "${cell.slice(0, 40)}" is not a sensor id`) })
      return
    }
    inHeader = false
    if (recordedAt === null) { add(key, `"${(row[0] ?? '').slice(0, 40)}" is not a time (use YYYY-MM-DDTHH:MM:SSZ)`); return }
    const bad = timeProblem(recordedAt, limits, latest)
    if (bad !== null) add(key, `${recordedAt.toISOString().slice(0, 19)}Z ${bad.message}`)
    if (row.length - 1 > parsed.sensorIds.length) add(key, `has ${row.length} columns, the header ${parsed.sensorIds.length + 1}`)
    const values: (number | null)[] = []
    row.slice(1).forEach((cell, i) => {
      if (cell === '' || parsed.sensorIds[i] === null || parsed.sensorIds[i] === undefined) { values.push(null); return }
      const value = asNumber(cell)
      if (value === null) add(key, `column ${i + 2}: "${cell.slice(0, 40)}" is not a number`)
      values.push(value)
    })
    const count = values.filter((v) => v !== null).length
    if (count > 0) { parsed.rows.push({ line: index + 1, recordedAt, values }); parsed.valueCount += count }
  })
  if (problems.ids === undefined && parsed.sensorIds.every((id) => id === null)) add('ids', 'needs a line of sensor ids (the last header line), e.g. TIME,10,55,56')
  else if (parsed.rows.length === 0 && Object.keys(problems).length === 0) add('file', 'has no readings')
  return { parsed, problems }
}

/** Values stored per step of an import: each step is one write and one progress update. */
const STEP_VALUES = 10_000

/** A value of an import is named by its line and column in the file. */
const csvPath: ValuePath = (value) => `line ${value.entry}, column ${value.index}`

/** The values of rows [from, ...) up to about STEP_VALUES, as the posted-readings path takes them. */
function stepValues (parsed: ParsedCsv, from: number): { values: PostedValue[], next: number } {
  const values: PostedValue[] = []
  let next = from
  while (next < parsed.rows.length && values.length < STEP_VALUES) {
    const row = parsed.rows[next++]
    if (row === undefined) break
    row.values.forEach((raw, i) => {
      const ref = parsed.sensorIds[i]
      if (raw !== null && ref !== null && ref !== undefined) values.push({ entry: row.line, index: i + 2, ref, recordedAt: row.recordedAt, raw })
    })
  }
  return { values, next }
}

async function deviceSensors (sql: Sql, device: Pick<DeviceAccess, 'id' | 'kitId'>, parsed: ParsedCsv): Promise<SensorMap> {
  const refs = [...new Set(parsed.sensorIds.filter((id): id is number => id !== null))].map((ref) => ({ ref }))
  return (await resolveSensors(sql, [device], refs)).get(device.id) ?? new Map()
}

/**
 * The whole file is checked before anything is stored (422 naming each problem): its syntax and
 * bounds, then every value through buildRows, the step of posted readings that resolves the
 * sensor and calibrates, so the job cannot meet a value the write path refuses. Values of sensors
 * the catalogue does not know are skipped there, as on every path, and come back in `skipped`.
 */
export async function validateSdCsv (sql: Sql, device: Pick<DeviceAccess, 'id' | 'kitId'>, text: string, limits: ImportLimits, now: Date): Promise<{ parsed: ParsedCsv, skipped: Skipped }> {
  const { parsed, problems } = parseSdCsv(text, limits, now)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  const sensors = await deviceSensors(sql, device, parsed)
  const skipped = noneSkipped()
  for (let from = 0; from < parsed.rows.length && Object.keys(problems).length < MAX_PROBLEMS;) {
    const step = stepValues(parsed, from)
    buildRows(device.id, step.values, sensors, problems, skipped, csvPath)
    from = step.next
  }
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  return { parsed, skipped }
}

export interface ImportView {
  id: number
  device_id: number
  state: string
  rows_total: number
  rows_done: number
  values_total: number
  stored: number
  duplicates: number
  /** values of sensors the catalogue does not know, left out (the same shape as POST readings' answer) */
  skipped: SkippedView
  error: string | null
  created_at: string
  finished_at: string | null
}

interface ImportRow { id: number, device_id: number, state: string, rows_total: number, rows_done: number, values_total: number, stored: number, duplicates: number, skipped: SkippedView | null, error: string | null, created_at: string | Date, finished_at: string | Date | null }

const NONE_SKIPPED: SkippedView = { count: 0, unknown_sensors: [], items: [] }

const present = (row: ImportRow): ImportView => ({
  id: row.id,
  device_id: row.device_id,
  state: row.state,
  rows_total: row.rows_total,
  rows_done: row.rows_done,
  values_total: row.values_total,
  stored: row.stored,
  duplicates: row.duplicates,
  skipped: row.skipped ?? NONE_SKIPPED,
  error: row.error,
  created_at: formatTimestamp(pgDate(row.created_at)),
  finished_at: formatTimestamp(pgDateOrNull(row.finished_at))
})
const IMPORT_COLUMNS = 'id, device_id, state, rows_total, rows_done, values_total, stored, duplicates, skipped, error, created_at, finished_at'

export interface ImportContext { database: Handle, send: JobSender, now: () => Date, limits: ImportLimits }

/** `POST /devices/:id/readings/csv`: owner or admin; validated whole, then queued with its row in one transaction. */
export async function createCsvImport (ctx: ImportContext, viewer: Viewer | null, deviceId: string, text: string): Promise<ImportView> {
  const device = await findDeviceAccess(ctx.database.sql, deviceId)
  assertCanWrite(viewer, device)
  const { parsed, skipped } = await validateSdCsv(ctx.database.sql, device, text, ctx.limits, ctx.now())
  return await inTransaction(ctx.database, async (tx) => {
    // JSON as text cast to jsonb: drizzle owns the shared client's serializers.
    const [row] = await tx.sql.unsafe<ImportRow[]>(`
      insert into reading_imports (device_id, user_id, rows_total, values_total, skipped, csv) values ($1, $2, $3, $4, $5::jsonb, $6)
      returning ${IMPORT_COLUMNS}`, [device.id, viewer.id, parsed.rows.length, parsed.valueCount, JSON.stringify(skippedView(skipped)), text])
    if (row === undefined) throw new Error('no import row')
    await ctx.send(tx.sql, 'csvImport', { importId: row.id })
    return present(row)
  })
}

/** `GET /devices/:id/readings/csv/:import_id`: progress, for whoever may write the device. */
export async function csvImportStatus (sql: Sql, viewer: Viewer | null, deviceId: string, importId: string): Promise<ImportView> {
  const device = await findDeviceAccess(sql, deviceId)
  assertCanWrite(viewer, device)
  const id = recordId(importId)
  const [row] = id !== null
    ? await sql.unsafe<ImportRow[]>(`select ${IMPORT_COLUMNS} from reading_imports where id = $1 and device_id = $2`, [id, device.id])
    : []
  if (row === undefined) throw errors.notFound('CSV import', Number.isNaN(Number(importId)) ? importId : Number(importId))
  return present(row)
}

export interface ImportJobContext {
  database: Handle
  /** the group-committing writer of posted readings */
  writer: ReadingsWriter
  now: () => Date
}

/**
 * The import job: the validated file is stored step by step through the path of posted readings
 * (resolveSensors, buildRows, the writer: calibration, idempotent writes, tiers, latest values),
 * and progress is written after each step. A retry starts over; readings are idempotent, so
 * nothing is stored twice and the counts of the finished import are still right.
 */
export async function runCsvImport (ctx: ImportJobContext, importId: number): Promise<void> {
  const sql = ctx.database.sql
  const [job] = await sql<{ device_id: number, csv: string | null }[]>`
    update reading_imports set state = 'running', rows_done = 0, stored = 0, duplicates = 0, error = null, updated_at = now()
    where id = ${importId} and state in ('queued', 'running', 'failed') returning device_id, csv`
  if (job === undefined || job.csv === null) return
  try {
    const device = await findDeviceAccess(sql, String(job.device_id))
    // Bounds were checked when the file was accepted; the clock has moved on since.
    const { parsed } = parseSdCsv(job.csv, { maxFutureMs: Number.MAX_SAFE_INTEGER, minTime: OLDEST_READING }, ctx.now())
    const sensors = await deviceSensors(sql, device, parsed)
    const skipped = noneSkipped()
    for (let from = 0; from < parsed.rows.length;) {
      const step = stepValues(parsed, from)
      const problems: FieldErrors = {}
      const rows = buildRows(device.id, step.values, sensors, problems, skipped, csvPath)
      if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
      const result = await ctx.writer.write(rows)
      from = step.next
      await sql`update reading_imports set rows_done = ${from}, stored = stored + ${result.stored}, duplicates = duplicates + ${result.duplicates}, updated_at = now() where id = ${importId}`
    }
    await sql`update reading_imports set state = 'done', csv = null, finished_at = now(), updated_at = now() where id = ${importId}`
    // Its owner hears of sensors the catalogue lacks in the device's ingest status too, as from MQTT.
    if (skipped.count > 0) {
      await mergeIngestStatus(sql, [{ deviceId: device.id, at: ctx.now(), unknownSensors: [...skipped.sensors].reverse(), skippedValues: skipped.count, rejectedMessages: 0, lastRejection: null }])
    }
  } catch (err) {
    const message = err instanceof ApiError && err.errors !== null && typeof err.errors === 'object' ? `${err.message}: ${JSON.stringify(err.errors)}` : err instanceof Error ? err.message : 'failed'
    await sql`update reading_imports set state = 'failed', error = ${message.slice(0, 500)}, updated_at = now() where id = ${importId}`
    throw err
  }
}
