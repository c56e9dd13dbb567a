import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { finished } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import {
  createCsvImport, createExportLink, timeBoundsText, csvImportStatus, errors, EXPORT_FORMATS, EXPORT_LINK_TTL_SECONDS, type ExportSlotLimits, ExportSlots, type ExportTimeouts, exportLinkViewer, findDeviceAccess,
  formatTimestamp, type ImportLimits, MAX_EXPORT_DEVICE_IDS, openDevicesExport, type OpenedExport, openReadingsExport, requestCsvArchive, verifyArchiveLink, type Viewer, watchExport
} from '@esp/domain'
import { baseUrl, binaryFile, EXPORT_COST, errorResponses, multipartForm, parsedParam, recordIdParam, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { readMultipartForm } from './multipart.js'

export interface ExportRouteContext extends ApiContext {
  exports: {
    /** verifies the exporter's download links */
    linkSecret: string
    /** signs and verifies the short-lived links of a device's streamed export */
    exportLinkSecret: string
    /** DATA_DIR/archives, written by the exporter */
    archiveDir: string
    importLimits: ImportLimits
    /** the largest CSV import body */
    importMaxBytes: number
    /** streamed exports at once, per process (each holds a connection of its own) and per caller */
    slots: ExportSlotLimits
    /** when an export is stopped: a client that takes no bytes, and any export at all */
    timeouts: ExportTimeouts
  }
}

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])
const DeviceId = recordIdParam('device', 20)
const DeviceParams = Type.Object({ device_id: DeviceId })
const Queued = Type.Object({ id: Type.String(), message: Type.String(), errors: Type.Null(), url: Type.Null() })
const Import = Type.Object({
  id: Type.Integer(),
  device_id: Type.Integer(),
  state: Type.String({ description: 'queued, running, done or failed' }),
  rows_total: Type.Integer(),
  rows_done: Type.Integer(),
  values_total: Type.Integer(),
  stored: Type.Integer({ description: 'values newly stored' }),
  duplicates: Type.Integer({ description: 'values already stored at that time (the first write wins)' }),
  skipped: Type.Object({
    count: Type.Integer(),
    unknown_sensors: Type.Array(Type.Union([Type.Integer(), Type.String()])),
    items: Type.Array(Type.Object({ path: Type.String(), sensor: Type.Union([Type.Integer(), Type.String()]) }))
  }, { description: 'values of sensor columns the catalogue does not know: skipped, the rest stored (also shown in the device\'s ingest status)' }),
  error: Nullable(Type.String()),
  created_at: Type.String(),
  finished_at: Nullable(Type.String())
})
// Plain JSON schemas, not TypeBox: the handlers stream these files, which no serializer sees.
const csvFile = { type: 'string', description: 'CSV with a header line' }
const ndjsonFile = { type: 'string', description: 'one JSON object a line' }
const parquetFile = { type: 'string', format: 'binary', description: 'Apache Parquet: recorded_at TIMESTAMP(MILLIS, UTC), device_id INT32 (across devices), sensor_id INT32, value DOUBLE (null when the reading has none), in row groups' }
const exportResponses = {
  200: { description: 'every reading of the range, streamed', content: { 'text/csv': { schema: csvFile }, 'application/x-ndjson': { schema: ndjsonFile }, 'application/vnd.apache.parquet': { schema: parquetFile } } },
  ...errorResponses(400, 404, 429, 503)
}
/** What every export takes: its format, range and sensor. */
const exportQuery = {
  format: Type.Optional(parsedParam(Type.String({ enum: [...EXPORT_FORMATS], default: EXPORT_FORMATS[0], description: 'csv (recorded_at,sensor_id,value), ndjson, csv_wide (recorded_at then a column per sensor: name (unit) [id]) or parquet; across devices each row also has device_id, after the time' }))),
  from: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'as for GET readings; default: the first reading' }))),
  to: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'as for GET readings; default: the last reading' }))),
  sensor_id: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'one sensor only' })))
}
const ExportLink = Type.Object({
  url: Type.String({ description: 'GET it as it is, or with format, from, to and sensor_id added; no other credential is needed' }),
  expires_at: Type.String({ format: 'date-time', description: `when the link stops working (${EXPORT_LINK_TTL_SECONDS / 60} minutes after it was made)` })
})
const CsvImportForm = multipartForm(Type.Object({ file: binaryFile("the SD card's CSV file") }, { required: ['file'] }))

/** CSV archive (contract), the streamed export and the historical CSV import (issue 7). */
export async function exportRoutes (fastify: FastifyInstance, ctx: ExportRouteContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['readings']
  const slots = new ExportSlots(ctx.exports.slots)
  // The SD-card file as the body itself; multipart is read by the handler.
  app.addContentTypeParser('text/csv', { parseAs: 'string' }, (_request, body, done) => { done(null, body) })

  app.get('/devices/:device_id/readings/csv_archive', {
    schema: {
      tags,
      summary: 'Queues a CSV archive of every reading; a download link is mailed (once per 6 hours per device)',
      operationId: 'requestCsvArchive',
      security: SIGNED_IN,
      params: DeviceParams,
      response: { 200: Queued, ...errorResponses(401, 403, 404, 420, 429) }
    }
  }, async (request) => {
    await requestCsvArchive({ database: ctx.database, send: ctx.send, now: ctx.clock }, request.viewer, request.params.device_id, baseUrl(request))
    return { id: 'ok', message: 'CSV Archive job added to queue', errors: null, url: null }
  })

  app.get('/devices/:device_id/readings/csv_archive/:file', {
    schema: {
      tags,
      summary: 'Downloads a CSV archive through the signed, expiring link of its e-mail',
      operationId: 'downloadCsvArchive',
      params: Type.Object({ device_id: DeviceId, file: Type.String({ maxLength: 64, description: 'the file name of the link' }) }),
      querystring: Type.Object({
        expires: Type.Optional(parsedParam(Type.Integer({ minimum: 0, description: 'epoch seconds after which the link is refused; required' }), { maxLength: 20 })),
        signature: Type.Optional(Type.String({ maxLength: 100, description: "the link's signature; required" }))
      }),
      response: { 200: { description: 'the archive', content: { 'text/csv': { schema: csvFile } } }, ...errorResponses(403, 404) }
    }
  }, async (request, reply) => {
    const link = verifyArchiveLink(ctx.exports.linkSecret, { deviceId: request.params.device_id, file: request.params.file, ...request.query }, ctx.clock())
    await findDeviceAccess(ctx.database, String(link.deviceId))
    const file = path.join(ctx.exports.archiveDir, String(link.deviceId), link.file)
    const size = await stat(file).then((s) => s.size, () => null)
    if (size === null) throw errors.notFound('CSV archive', link.file)
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-length', size)
      .header('content-disposition', `attachment; filename=${link.file}`)
      .header('cache-control', 'private, no-store')
      .send(createReadStream(file))
  })

  /**
   * Streams an export, counted against the exports that may run at once (the process's and the
   * caller's) until its connection is gone. A client that stops reading, or an export past its
   * time, loses its socket: the reply's stream is then destroyed, which cancels the COPY and closes
   * its connection, and that frees the slot.
   */
  const streamExport = async (request: FastifyRequest, reply: FastifyReply, open: () => Promise<OpenedExport>, viewer: Viewer | null = request.viewer): Promise<FastifyReply> => {
    const slot = slots.take(viewer, request.ip)
    let opened
    try {
      opened = await open()
    } catch (err) {
      slot.release()
      throw err
    }
    const unwatch = watchExport(reply.raw.socket, ctx.exports.timeouts, (reason) => {
      request.log.info({ reason }, reason === 'idle' ? 'export stopped: the client took no bytes' : 'export stopped: it ran too long')
      reply.raw.destroy()
    })
    // Watched until the answer is sent or its socket gone (its tail may still be in the socket
    // when the COPY ends), and counted until the COPY's connection is closed, however it ended.
    finished(reply.raw, () => { unwatch(); slot.leaveCaller() })
    void opened.closed.finally(slot.release)
    return reply.type(opened.contentType).header('content-disposition', `attachment; filename=${opened.filename}`).send(opened.stream)
  }

  const linkContext = { database: ctx.database, secret: ctx.exports.exportLinkSecret, now: ctx.clock }

  app.get('/devices/:device_id/readings/export', {
    config: { cost: EXPORT_COST },
    schema: {
      tags,
      summary: 'Streams every reading of a range: CSV, NDJSON or Parquet with one row per value by sensor then time, or a wide CSV with one line per time and a column per sensor',
      operationId: 'exportReadings',
      params: DeviceParams,
      querystring: Type.Object({
        ...exportQuery,
        download_key: Type.Optional(Type.String({ maxLength: 100, description: 'the key of a link from POST …/readings/export/link: the export as the user who asked for it, for this device only, until the link expires' }))
      }),
      response: { ...exportResponses, ...errorResponses(403) }
    }
  }, async (request, reply) => {
    const key = request.query.download_key
    if (key === undefined) return await streamExport(request, reply, async () => await openReadingsExport(request.reads.database, request.viewer, request.params.device_id, request.query))
    const viewer = await exportLinkViewer(linkContext, request.params.device_id, key)
    // What a link downloads may be private: no shared cache keeps it (the request itself carries no credential).
    reply.header('cache-control', 'private, no-store')
    return await streamExport(request, reply, async () => await openReadingsExport(request.reads.database, viewer, request.params.device_id, request.query), viewer)
  })

  app.post('/devices/:device_id/readings/export/link', {
    schema: {
      tags,
      summary: `A link to GET …/readings/export of this device without a session token in its address (for a browser's download), good for ${EXPORT_LINK_TTL_SECONDS / 60} minutes`,
      operationId: 'createExportLink',
      security: SIGNED_IN,
      params: DeviceParams,
      response: { 200: ExportLink, ...errorResponses(401, 404, 429) }
    }
  }, async (request, reply) => {
    const link = await createExportLink(linkContext, request.viewer, request.params.device_id)
    reply.header('cache-control', 'no-store')
    return { url: `${baseUrl(request)}/v0/devices/${link.deviceId}/readings/export?download_key=${link.key}`, expires_at: formatTimestamp(link.expiresAt) }
  })

  app.get('/readings/export', {
    config: { cost: EXPORT_COST },
    schema: {
      tags,
      summary: 'Streams every reading of several devices (by ids, tags or a bounding box) ordered by time; resume a broken download with from set to the last time received',
      description: 'Only devices the caller may see: a private device named in device_ids is a 404, and tags or a box never find one. The given selectors all apply. ' +
        'Rows come by time, then device, then sensor; a client that lost the connection asks again with from set to the last recorded_at it holds, and drops the rows of that instant it already has (device_id, sensor_id and recorded_at name a reading).',
      operationId: 'exportDevicesReadings',
      querystring: Type.Object({
        device_ids: Type.Optional(Type.String({ maxLength: 12_000, pattern: '^[0-9, ]*$', description: `device ids separated by commas (e.g. 1,2,3), at most ${MAX_EXPORT_DEVICE_IDS}` })),
        with_tags: Type.Optional(Type.String({ maxLength: 1000, description: 'tag names separated by |: devices with any of them' })),
        bbox: Type.Optional(Type.String({ maxLength: 100, pattern: '^ *-?[0-9]+(\\.[0-9]+)? *(, *-?[0-9]+(\\.[0-9]+)? *){3}$', description: 'west,south,east,north in degrees, e.g. 2.05,41.32,2.23,41.47 (west above east crosses the antimeridian)' })),
        exposure: Type.Optional(parsedParam(Type.String({ enum: ['indoor', 'outdoor'], description: 'only indoor or only outdoor devices (a device without one is outdoor)' }))),
        ...exportQuery
      }),
      response: exportResponses
    }
  }, async (request, reply) => await streamExport(request, reply, async () => await openDevicesExport(request.reads.database, request.viewer, request.query)))

  app.post('/devices/:device_id/readings/csv', {
    bodyLimit: ctx.exports.importMaxBytes,
    schema: {
      tags,
      summary: "Imports an SD card's CSV file (text/csv body, or multipart field file); validated whole, stored by a job",
      description: `Times ${timeBoundsText(ctx.exports.importLimits)}; a bad cell refuses the whole file (422), a column of an unknown sensor is skipped and named in \`skipped\`.`,
      operationId: 'importReadingsCsv',
      security: SIGNED_IN,
      body: { content: { 'text/csv': { schema: Type.String({ description: "the SD card's CSV file" }) }, 'multipart/form-data': CsvImportForm } },
      params: DeviceParams,
      response: { 202: Import, ...errorResponses(400, 401, 403, 404, 413, 415, 422, 429) }
    }
  }, async (request, reply) => {
    let text: string
    if (request.isMultipart()) {
      const form = await readMultipartForm(request, 'file')
      if (form.file === undefined) throw errors.parameterMissing(['file'])
      text = form.file.toString('utf8')
    } else if (typeof request.body === 'string') {
      text = request.body
    } else {
      throw errors.unsupportedMediaType(request.headers['content-type'] ?? 'none')
    }
    const created = await createCsvImport({ database: ctx.database, send: ctx.send, now: ctx.clock, limits: ctx.exports.importLimits }, request.viewer, request.params.device_id, text)
    return reply.code(202).header('location', `${baseUrl(request)}/v0/devices/${created.device_id}/readings/csv/${created.id}`).send(created)
  })

  app.get('/devices/:device_id/readings/csv/:import_id', {
    schema: {
      tags,
      summary: 'Progress of a CSV import',
      operationId: 'getReadingsCsvImport',
      security: SIGNED_IN,
      params: Type.Object({ device_id: DeviceId, import_id: recordIdParam('CSV import', 20) }),
      response: { 200: Import, ...errorResponses(401, 403, 404, 429) }
    }
  }, async (request) => await csvImportStatus(ctx.database, request.viewer, request.params.device_id, request.params.import_id))
}
