import { pipeline, type Readable } from 'node:stream'
import { copyOut, type Database } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { assertCanSee, findDeviceAccess } from '../devices/device-access.js'
import { errors } from '../errors.js'
import { parseSensorIdParam, parseTimeParam } from '../readings/time-params.js'
import { exportByTimeCopySql, exportCopySql, type ExportRange } from './copy-sql.js'
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

/**
 * `GET /devices/:id/readings/export`: the readings privacy rules (a private device is a 404 to
 * others), the history's from/to syntax, no point cap. Parameters are all checked before the
 * stream opens, so a bad one is a 400 and never a broken download.
 */
export async function openReadingsExport (database: Pick<Database, 'sql' | 'url'>, viewer: Viewer | null, deviceId: string, params: ExportParams): Promise<OpenedExport> {
  const sql = database.sql
  const device = await findDeviceAccess(sql, deviceId)
  assertCanSee(viewer, device)
  const format = params.format === undefined || params.format === '' ? EXPORT_FORMATS[0] : params.format
  if (!isExportFormat(format)) throw errors.badRequest(`format must be one of ${EXPORT_FORMATS.join(', ')}`, { format: ['is not included in the list'] })
  const from = parseTimeParam('from', params.from) ?? null
  const to = parseTimeParam('to', params.to) ?? null
  if (from !== null && to !== null && from > to) throw errors.badRequest('from must not be after to', { from: ['is after to'] })
  const sensorId = parseSensorIdParam(params.sensor_id)
  if (sensorId !== null) {
    const [known] = await sql<{ id: number }[]>`select id from sensors where id = ${sensorId}`
    if (known === undefined) throw errors.notFound('Sensor', sensorId)
  }
  const range: ExportRange = { deviceId: device.id, sensorId, from, until: to === null ? null : new Date(to.getTime() + 1) }
  const columns = format === 'csv_wide' ? await wideColumns(sql, range) : []
  const text = format === 'csv_wide' ? exportByTimeCopySql(range, columns.map((c) => c.id)) : exportCopySql(range)
  const copy = await copyOut(database.url, text, { applicationName: 'esp-export' })
  const rows = format === 'parquet' ? new ExportParquet() : format === 'csv_wide' ? new WideCsvLines(columns) : new ExportLines(format)
  // A reply destroyed half-way (the client gone) destroys the COPY's stream too, which cancels it.
  const stream = pipeline(copy.stream, rows, () => {})
  return { stream, closed: copy.closed, contentType: FORMATS[format].contentType, filename: `device_${device.id}_${FORMATS[format].file}` }
}

/**
 * The wide CSV's columns: the device's sensors (its components, which the write path adds for
 * every sensor it stores) with a reading in the range, in sensor id order. One probe of the
 * readings key per sensor, before the COPY.
 */
async function wideColumns (sql: Database['sql'], range: ExportRange): Promise<WideColumn[]> {
  const from = range.from?.toISOString() ?? '-infinity'
  const until = range.until?.toISOString() ?? 'infinity'
  return await sql<WideColumn[]>`
    select s.id, s.name, s.unit, m.name as measurement
    from components c join sensors s on s.id = c.sensor_id left join measurements m on m.id = s.measurement_id
    where c.device_id = ${range.deviceId} and (${range.sensorId}::int is null or c.sensor_id = ${range.sensorId})
      and exists (select from readings r where r.device_id = c.device_id and r.sensor_id = c.sensor_id
        and r.recorded_at >= ${from}::timestamptz and r.recorded_at < ${until}::timestamptz)
    order by s.id`
}
