import { pipeline, type Readable } from 'node:stream'
import { copyOut, type Database } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { assertCanSee, findDeviceAccess } from '../devices/device-access.js'
import { errors } from '../errors.js'
import { parseSensorIdParam, parseTimeParam, parseToParam } from '../readings/time-params.js'
import { devicesExportCopySql, exportByTimeCopySql, exportCopySql, type ExportRange } from './copy-sql.js'
import { type DevicesExportParams, parseDeviceSelection, selectedPairs } from './export-selection.js'
import { ExportLines } from './export-lines.js'
import { ExportParquet } from './export-parquet.js'
import { type WideColumn, WideCsvLines } from './export-wide.js'

export interface ExportParams {
  format?: string | undefined
  from?: string | undefined
  to?: string | undefined
  sensor_id?: string | undefined
}

export interface OpenedExport {
  stream: Readable
  /** settles when the export's connection is closed */
  closed: Promise<void>
  contentType: string
  filename: string
}

/** The `format`s of the export, the first the default. */
export const EXPORT_FORMATS = ['csv', 'ndjson', 'csv_wide', 'parquet'] as const
export type ExportFormat = typeof EXPORT_FORMATS[number]

const isExportFormat = (text: string): text is ExportFormat => (EXPORT_FORMATS as readonly string[]).includes(text)

/** Each format's media type and file name ending. */
const FORMATS: Record<ExportFormat, { contentType: string, file: string }> = {
  csv: { contentType: 'text/csv; charset=utf-8', file: 'readings.csv' },
  ndjson: { contentType: 'application/x-ndjson', file: 'readings.ndjson' },
  csv_wide: { contentType: 'text/csv; charset=utf-8', file: 'readings_wide.csv' },
  parquet: { contentType: 'application/vnd.apache.parquet', file: 'readings.parquet' }
}

/** The parameters every export shares, checked before any stream opens. */
interface ExportRequest { format: ExportFormat, from: Date | null, to: Date | null, sensorId: number | null }

async function exportRequest (sql: Database['sql'], params: ExportParams): Promise<ExportRequest> {
  const format = params.format === undefined || params.format === '' ? EXPORT_FORMATS[0] : params.format
  if (!isExportFormat(format)) throw errors.badRequest(`format must be one of ${EXPORT_FORMATS.join(', ')}`, { format: ['is not included in the list'] })
  const from = parseTimeParam('from', params.from) ?? null
  // As the history's: a `to` to the second includes that second (a printed last_reading_at).
  const to = parseToParam(params.to) ?? null
  if (from !== null && to !== null && from > to) throw errors.badRequest('from must not be after to', { from: ['is after to'] })
  const sensorId = parseSensorIdParam(params.sensor_id)
  if (sensorId !== null) {
    const [known] = await sql<{ id: number }[]>`select id from sensors where id = ${sensorId}`
    if (known === undefined) throw errors.notFound('Sensor', sensorId)
  }
  return { format, from, to, sensorId }
}

/** The COPY's rows in `format`, streamed; `withDevice`: rows across devices. */
async function openStream (database: Pick<Database, 'url'>, text: string, format: ExportFormat, columns: WideColumn[], withDevice: boolean, filename: string): Promise<OpenedExport> {
  const copy = await copyOut(database.url, text, withDevice ? { applicationName: 'esp-export', workMem: WINDOW_WORK_MEM } : { applicationName: 'esp-export' })
  const rows = format === 'parquet' ? new ExportParquet(withDevice) : format === 'csv_wide' ? new WideCsvLines(columns, withDevice) : new ExportLines(format, withDevice)
  // A reply destroyed half-way (the client gone) destroys the COPY's stream too, which cancels it.
  const stream = pipeline(copy.stream, rows, () => {})
  return { stream, closed: copy.closed, contentType: FORMATS[format].contentType, filename: `${filename}_${FORMATS[format].file}` }
}

/**
 * `GET /devices/:id/readings/export`: the readings privacy rules (a private device is a 404 to
 * others), the history's from/to syntax, no point cap. Parameters are all checked before the
 * stream opens, so a bad one is a 400 and never a broken download.
 */
export async function openReadingsExport (database: Pick<Database, 'sql' | 'url'>, viewer: Viewer | null, deviceId: string, params: ExportParams): Promise<OpenedExport> {
  const sql = database.sql
  const device = await findDeviceAccess(sql, deviceId)
  assertCanSee(viewer, device)
  const { format, from, to, sensorId } = await exportRequest(sql, params)
  const range: ExportRange = { deviceId: device.id, sensorId, from, until: to === null ? null : new Date(to.getTime() + 1) }
  const columns = format === 'csv_wide' ? await wideColumns(sql, range) : []
  const text = format === 'csv_wide' ? exportByTimeCopySql(range, columns.map((c) => c.id)) : exportCopySql(range)
  return await openStream(database, text, format, columns, false, `device_${device.id}`)
}

/** rows a window of the export across devices aims at (at one reading a minute a pair), and the sort memory they take */
const WINDOW_ROWS = 500_000
const WINDOW_WORK_MEM = '64MB'
const MINUTE_MS = 60_000

/**
 * `GET /readings/export`: every reading of the devices chosen by ids, tags or a bounding box (all
 * that are given), of those the viewer may see, ordered by time so that a client that lost the
 * connection continues with `from` set to the last time it holds. A private device named by id is
 * a 404 as on its own export; a tag or a box never finds one the viewer may not see.
 */
export async function openDevicesExport (database: Pick<Database, 'sql' | 'url'>, viewer: Viewer | null, params: DevicesExportParams): Promise<OpenedExport> {
  const sql = database.sql
  const selection = parseDeviceSelection(params)
  const { format, from, to, sensorId } = await exportRequest(sql, params)
  const pairs = await selectedPairs(sql, viewer, selection, { sensorId, from, until: to === null ? null : new Date(to.getTime() + 1) })
  const first = pairs.reduce((min, p) => Math.min(min, p.first.getTime()), Infinity)
  const last = pairs.reduce((max, p) => Math.max(max, p.last.getTime()), -Infinity)
  const windowMs = Math.min(7 * 24 * 60, Math.max(60, Math.floor(WINDOW_ROWS / Math.max(1, pairs.length)))) * MINUTE_MS
  const range = pairs.length === 0 ? { pairs, from: new Date(0), until: new Date(0), windowMs } : { pairs, from: new Date(first), until: new Date(last + 1), windowMs }
  const columns = format === 'csv_wide' ? await sensorColumns(sql, [...new Set(pairs.map((p) => p.sensorId))]) : []
  return await openStream(database, devicesExportCopySql(range), format, columns, true, 'devices')
}

/**
 * The wide CSV's columns: the device's sensors (its components, which the write path adds for
 * every sensor it stores) with a reading in the range, in sensor id order. One probe of the
 * readings key per sensor, before the COPY.
 */
async function wideColumns (sql: Database['sql'], range: ExportRange): Promise<WideColumn[]> {
  const from = range.from?.toISOString() ?? '-infinity'
  const until = range.until?.toISOString() ?? 'infinity'
  const [found] = await sql<{ ids: number[] }[]>`
    select coalesce(array_agg(c.sensor_id), '{}') as ids
    from components c
    where c.device_id = ${range.deviceId} and (${range.sensorId}::int is null or c.sensor_id = ${range.sensorId})
      and exists (select from readings r where r.device_id = c.device_id and r.sensor_id = c.sensor_id
        and r.recorded_at >= ${from}::timestamptz and r.recorded_at < ${until}::timestamptz)`
  return await sensorColumns(sql, found?.ids ?? [])
}

/** Sensors as columns of the wide CSV, in id order. */
async function sensorColumns (sql: Database['sql'], ids: number[]): Promise<WideColumn[]> {
  return await sql<WideColumn[]>`
    select s.id, s.name, s.unit, m.name as measurement
    from sensors s left join measurements m on m.id = s.measurement_id
    where s.id = any(${ids}::int4[])
    order by s.id`
}
