import { pipeline, type Readable } from 'node:stream'
import { copyOut, type Database } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { assertCanSee, findDeviceAccess } from '../devices/device-access.js'
import { errors } from '../errors.js'
import { parseSensorIdParam, parseTimeParam } from '../readings/time-params.js'
import { type ExportFormat, exportCopySql } from './copy-sql.js'
import { ExportLines } from './export-lines.js'

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

const CONTENT_TYPES: Record<ExportFormat, string> = { csv: 'text/csv; charset=utf-8', ndjson: 'application/x-ndjson' }

/**
 * `GET /devices/:id/readings/export`: the readings privacy rules (a private device is a 404 to
 * others), the history's from/to syntax, no point cap. Parameters are all checked before the
 * stream opens, so a bad one is a 400 and never a broken download.
 */
export async function openReadingsExport (database: Pick<Database, 'sql' | 'url'>, viewer: Viewer | null, deviceId: string, params: ExportParams): Promise<OpenedExport> {
  const sql = database.sql
  const device = await findDeviceAccess(sql, deviceId)
  assertCanSee(viewer, device)
  const format = params.format === undefined || params.format === '' ? 'csv' : params.format
  if (format !== 'csv' && format !== 'ndjson') throw errors.badRequest('format must be csv or ndjson', { format: ['is not included in the list'] })
  const from = parseTimeParam('from', params.from) ?? null
  const to = parseTimeParam('to', params.to) ?? null
  if (from !== null && to !== null && from > to) throw errors.badRequest('from must not be after to', { from: ['is after to'] })
  const sensorId = parseSensorIdParam(params.sensor_id)
  if (sensorId !== null) {
    const [known] = await sql<{ id: number }[]>`select id from sensors where id = ${sensorId}`
    if (known === undefined) throw errors.notFound('Sensor', sensorId)
  }
  const until = to === null ? null : new Date(to.getTime() + 1)
  const copy = await copyOut(database.url, exportCopySql({ deviceId: device.id, sensorId, from, until }), { applicationName: 'esp-export' })
  // A reply destroyed half-way (the client gone) destroys the COPY's stream too, which cancels it.
  const stream = pipeline(copy.stream, new ExportLines(format), () => {})
  return { stream, closed: copy.closed, contentType: CONTENT_TYPES[format], filename: `device_${device.id}_readings.${format}` }
}
