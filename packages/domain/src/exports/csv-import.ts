import { parse } from 'csv-parse/sync'
import { failReadingImport, findReadingImport, finishReadingImport, inTransaction, insertReadingImport, mergeIngestStatus, pgDate, pgDateOrNull, type Handle, type ReadingImportRow, recordReadingImportStep, type ReadingsWriter, startReadingImport } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { assertCanWrite, type DeviceAccess, findDeviceAccess } from '../devices/device-access.js'
import { ApiError, errors, type FieldErrors } from '../errors.js'
import { recordId } from '../validation/record-id.js'
import type { JobSender } from '../jobs.js'
import { formatTimestamp } from '../time.js'
import { addProblem, asNumber, MAX_PROBLEMS, type BatchLimits, OLDEST_READING, type PostedValue, timeProblem, type ValuePath } from '../readings/batch.js'
import { buildRows, type IngestContext, noneSkipped, resolveSensors, type SensorMap, type Skipped, skippedView, type SkippedView, storeMessages } from '../readings/ingest.js'
import { parseRecordedAt } from '../readings/time-params.js'

/**
 * Historical import of the firmware's SD-card CSV (clients.md W25): header lines (short titles,
 * units, titles, then platform sensor ids), then one line per time: `2026-03-01T22:14:00Z,95,...`.
 * The header is every line before the first one that starts with a time; its last line holds the
 * sensor ids. Cells are separated by commas, or by semicolons (European spreadsheets: decided by
 * the first line that is not blank, where a value may then carry a decimal comma); a quoted cell
 * may hold the separator and doubled quotes (RFC 4180). A column without an id is ignored, as the web upload ignores it; a column whose id
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

/** One line of the file that is not blank: its number (from 1, where it starts) and its cells, trimmed. */
interface CsvLine { number: number, cells: string[] }

/** `;` when the first line that is not blank separates more by semicolons than by commas (quoted text left out). */
function separatorOf (text: string): ',' | ';' {
  const first = text.split(/\r?\n/).find((line) => line.trim() !== '') ?? ''
  const bare = first.replace(/"[^"]*"/g, '')
  return (bare.match(/;/g)?.length ?? 0) > (bare.match(/,/g)?.length ?? 0) ? ';' : ','
}

interface CsvRecord { record: string[], raw: string }

/** The file's lines as cells (csv-parse), or the line where its quoting breaks and why. */
function csvLines (text: string, delimiter: ',' | ';'): { lines: CsvLine[] } | { line: number, message: string } {
  let records: CsvRecord[]
  try {
    records = parse(text, { delimiter, record_delimiter: ['\r\n', '\n'], relax_column_count: true, relax_quotes: true, trim: true, raw: true, skip_empty_lines: false }) as unknown as CsvRecord[]
  } catch (err) {
    const line = typeof (err as { lines?: unknown }).lines === 'number' ? (err as { lines: number }).lines : 1
    return { line, message: `cannot be read as CSV: ${err instanceof Error ? err.message.replace(/^[^:]*: /, '') : 'bad quoting'}` }
  }
  const lines: CsvLine[] = []
  let number = 1
  for (const { record, raw } of records) {
    // A quoted cell may span lines: the next record starts after all of them.
    if (raw.trim() !== '') lines.push({ number, cells: record.map((cell) => cell.trim()) })
    number += raw.split('\n').length - (raw.endsWith('\n') ? 1 : 0)
  }
  return { lines }
}

/** A value cell: in a semicolon-separated file `21,5` is 21.5, as the spreadsheet wrote it. */
const valueCell = (cell: string, delimiter: ',' | ';'): string => delimiter === ';' && /^-?\d+,\d+$/.test(cell) ? cell.replace(',', '.') : cell

/** Parses and checks a whole file; every problem is named by line (and column), up to 100. */
export function parseSdCsv (text: string, limits: ImportLimits, now: Date): { parsed: ParsedCsv, problems: FieldErrors } {
  const problems: FieldErrors = {}
  const add = (key: string, message: string): void => { addProblem(problems, key, message) }
  const body = text.replace(/^\uFEFF/, '')
  const delimiter = separatorOf(body)
  const read = csvLines(body, delimiter)
  const parsed: ParsedCsv = { sensorIds: [], rows: [], valueCount: 0 }
  if ('message' in read) {
    add(`line ${read.line}`, read.message)
    return { parsed, problems }
  }
  const latest = now.getTime() + limits.maxFutureMs
  let inHeader = true
  read.lines.forEach(({ number, cells: row }) => {
    const key = `line ${number}`
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
      const value = asNumber(valueCell(cell, delimiter))
      if (value === null) add(key, `column ${i + 2}: "${cell.slice(0, 40)}" is not a number`)
      values.push(value)
    })
    const count = values.filter((v) => v !== null).length
    if (count > 0) { parsed.rows.push({ line: number, recordedAt, values }); parsed.valueCount += count }
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

async function deviceSensors (h: Handle, device: Pick<DeviceAccess, 'id' | 'kitId'>, parsed: ParsedCsv): Promise<SensorMap> {
  const refs = [...new Set(parsed.sensorIds.filter((id): id is number => id !== null))].map((ref) => ({ ref }))
  return (await resolveSensors(h, [device], refs)).get(device.id) ?? new Map()
}

/**
 * The whole file is checked before anything is stored (422 naming each problem): its syntax and
 * bounds, then every value through buildRows, the step of posted readings that resolves the
 * sensor and calibrates, so the job cannot meet a value the write path refuses. Values of sensors
 * the catalogue does not know are skipped there, as on every path, and come back in `skipped`.
 */
export async function validateSdCsv (h: Handle, device: Pick<DeviceAccess, 'id' | 'kitId'>, text: string, limits: ImportLimits, now: Date): Promise<{ parsed: ParsedCsv, skipped: Skipped }> {
  const { parsed, problems } = parseSdCsv(text, limits, now)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  const sensors = await deviceSensors(h, device, parsed)
  const skipped = noneSkipped()
  for (let from = 0; from < parsed.rows.length && Object.keys(problems).length < MAX_PROBLEMS;) {
    const step = stepValues(parsed, from)
    buildRows(device.id, step.values, sensors, problems, skipped, csvPath)
    from = step.next
  }
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  return { parsed, skipped }
}

/** An import as its answer shows it: the row, with times as the contract writes them. */
export type ImportView = Omit<ReadingImportRow, 'skipped' | 'created_at' | 'finished_at'> & {
  /** values of sensors the catalogue does not know, left out (the same shape as POST readings' answer) */
  skipped: SkippedView
  created_at: string
  finished_at: string | null
}

const NONE_SKIPPED: SkippedView = { count: 0, unknown_sensors: [], items: [] }

const present = (row: ReadingImportRow): ImportView => ({
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

export interface ImportContext { database: Handle, send: JobSender, now: () => Date, limits: ImportLimits }

/** `POST /devices/:id/readings/csv`: owner or admin; validated whole, then queued with its row in one transaction. */
export async function createCsvImport (ctx: ImportContext, viewer: Viewer | null, deviceId: string, text: string): Promise<ImportView> {
  const device = await findDeviceAccess(ctx.database, deviceId)
  assertCanWrite(viewer, device)
  const { parsed, skipped } = await validateSdCsv(ctx.database, device, text, ctx.limits, ctx.now())
  return await inTransaction(ctx.database, async (tx) => {
    const row = await insertReadingImport(tx, { deviceId: device.id, userId: viewer.id, rowsTotal: parsed.rows.length, valuesTotal: parsed.valueCount, skipped: skippedView(skipped), csv: text })
    await ctx.send(tx, 'csvImport', { importId: row.id })
    return present(row)
  })
}

/** `GET /devices/:id/readings/csv/:import_id`: progress, for whoever may write the device. */
export async function csvImportStatus (h: Handle, viewer: Viewer | null, deviceId: string, importId: string): Promise<ImportView> {
  const device = await findDeviceAccess(h, deviceId)
  assertCanWrite(viewer, device)
  const id = recordId(importId)
  const row = id !== null ? await findReadingImport(h, id, device.id) : undefined
  if (row === undefined) throw errors.notFound('CSV import', Number.isNaN(Number(importId)) ? importId : Number(importId))
  return present(row)
}

export interface ImportJobContext {
  database: Handle
  /** the group-committing writer of posted readings */
  writer: ReadingsWriter
  now: () => Date
}

/** Bounds were checked when the file was accepted; the clock has moved on since. */
const ACCEPTED: ImportLimits = { maxFutureMs: Number.MAX_SAFE_INTEGER, minTime: OLDEST_READING }

/** Adds a step's skipped values to the import's, within the bounds of Skipped. */
function addSkipped (into: Skipped, step: Skipped): void {
  into.count += step.count
  for (const sensor of step.sensors) if (into.sensors.size < MAX_PROBLEMS) into.sensors.add(sensor)
  for (const item of step.items) if (into.items.length < MAX_PROBLEMS) into.items.push(item)
}

/**
 * The import job: the validated file is stored step by step through the one ingest path of
 * posted readings and device messages (storeMessages: sensors resolved, calibrated rows built,
 * the group-committing writer: idempotent writes, tiers, latest values), and progress is written
 * after each step. A retry starts over; readings are idempotent, so nothing is stored twice and
 * the counts of the finished import are still right.
 */
export async function runCsvImport (ctx: ImportJobContext, importId: number): Promise<void> {
  const job = await startReadingImport(ctx.database, importId)
  if (job === undefined || job.csv === null) return
  const ingest: IngestContext = { database: ctx.database, writer: ctx.writer, now: ctx.now, limits: { ...ACCEPTED, maxValues: Number.MAX_SAFE_INTEGER } }
  try {
    const device = await findDeviceAccess(ctx.database, String(job.device_id))
    const { parsed } = parseSdCsv(job.csv, ACCEPTED, ctx.now())
    const skipped = noneSkipped()
    for (let from = 0; from < parsed.rows.length;) {
      const step = stepValues(parsed, from)
      const [outcome] = await storeMessages(ingest, [{ device, values: step.values, pathOf: csvPath }])
      if (outcome?.status === 'rejected') throw errors.unprocessable(outcome.problems)
      if (outcome?.status !== 'stored') throw new Error('a message with its device has an outcome')
      addSkipped(skipped, outcome.skipped)
      from = step.next
      await recordReadingImportStep(ctx.database, importId, from, outcome.result.stored, outcome.result.duplicates)
    }
    await finishReadingImport(ctx.database, importId)
    // Its owner hears of sensors the catalogue lacks in the device's ingest status too, as from MQTT.
    if (skipped.count > 0) {
      await mergeIngestStatus(ctx.database, [{ deviceId: device.id, at: ctx.now(), unknownSensors: [...skipped.sensors].reverse(), skippedValues: skipped.count, rejectedMessages: 0, lastRejection: null }])
    }
  } catch (err) {
    const message = err instanceof ApiError && err.errors !== null && typeof err.errors === 'object' ? `${err.message}: ${JSON.stringify(err.errors)}` : err instanceof Error ? err.message : 'failed'
    await failReadingImport(ctx.database, importId, message)
    throw err
  }
}
