import { pipeline, type Readable } from 'node:stream'
import {
  copyDeviceReadings, copyDeviceReadingsByTime, copyDevicesReadings, type CopyOut, type Database, type ExportRange, exportSensorColumns, exportSensorExists,
  type Handle, sensorIdsWithReadings
} from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { assertCanSee, findDeviceAccess } from '../devices/device-access.js'
import { errors } from '../errors.js'
import { parseSensorIdParam, parseTimeParam, parseToParam } from '../readings/time-params.js'
import type { ExportParams } from './export-params.js'
import { type DevicesExportParams, parseDeviceSelection, selectedPairs } from './export-selection.js'
import { ExportLines } from './export-lines.js'
import { ExportParquet } from './export-parquet.js'
import { type WideColumn, WideCsvLines } from './export-wide.js'

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

async function exportRequest (database: Handle, params: ExportParams): Promise<ExportRequest> {
  const format = params.format === undefined || params.format === '' ? EXPORT_FORMATS[0] : params.format
  if (!isExportFormat(format)) throw errors.badRequest(`format must be one of ${EXPORT_FORMATS.join(', ')}`, { format: ['is not included in the list'] })
  const from = parseTimeParam('from', params.from) ?? null
  // As the history's: a `to` to the second includes that second (a printed last_reading_at).
  const to = parseToParam(params.to) ?? null
  if (from !== null && to !== null && from > to) throw errors.badRequest('from must not be after to', { from: ['is after to'] })
  const sensorId = parseSensorIdParam(params.sensor_id)
  if (sensorId !== null && !await exportSensorExists(database, sensorId)) throw errors.notFound('Sensor', sensorId)
  return { format, from, to, sensorId }
}

/** The COPY's rows in `format`, streamed; `withDevice`: rows across devices. */
function openStream (copy: CopyOut, format: ExportFormat, columns: WideColumn[], withDevice: boolean, filename: string): OpenedExport {
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
export async function openReadingsExport (database: Database, viewer: Viewer | null, deviceId: string, params: ExportParams): Promise<OpenedExport> {
  const device = await findDeviceAccess(database, deviceId)
  assertCanSee(viewer, device)
  const { format, from, to, sensorId } = await exportRequest(database, params)
  const range: ExportRange = { deviceId: device.id, sensorId, from, until: to === null ? null : new Date(to.getTime() + 1) }
  const columns = format === 'csv_wide' ? await wideColumns(database, range) : []
  const copy = format === 'csv_wide' ? await copyDeviceReadingsByTime(database, range, columns.map((c) => c.id)) : await copyDeviceReadings(database, range)
  return openStream(copy, format, columns, false, `device_${device.id}`)
}

/**
 * `GET /readings/export`: every reading of the devices chosen by ids, tags or a bounding box (all
 * that are given), of those the viewer may see, ordered by time so that a client that lost the
 * connection continues with `from` set to the last time it holds. A private device named by id is
 * a 404 as on its own export; a tag or a box never finds one the viewer may not see.
 */
export async function openDevicesExport (database: Database, viewer: Viewer | null, params: DevicesExportParams): Promise<OpenedExport> {
  const selection = parseDeviceSelection(params)
  const { format, from, to, sensorId } = await exportRequest(database, params)
  const pairs = await selectedPairs(database, viewer, selection, { sensorId, from, until: to === null ? null : new Date(to.getTime() + 1) })
  const columns = format === 'csv_wide' ? await exportSensorColumns(database, [...new Set(pairs.map((p) => p.sensorId))]) : []
  return openStream(await copyDevicesReadings(database, pairs), format, columns, true, 'devices')
}

/**
 * The wide CSV's columns: the device's sensors with a reading in the range, in sensor id order,
 * found before the COPY.
 */
async function wideColumns (database: Handle, range: ExportRange): Promise<WideColumn[]> {
  return await exportSensorColumns(database, await sensorIdsWithReadings(database, range))
}
