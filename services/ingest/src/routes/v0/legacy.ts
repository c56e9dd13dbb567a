import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { errors, findDeviceByMac, ingestReadings } from '@esp/domain'
import { errorResponses } from '@esp/http'
import type { IngestRouteContext } from '../../context.js'

/** `UTC:YYYY,M,D,HH,MM,SS#`: month and day unpadded, time padded (behaviour.md §6.3). */
export function legacyClock (now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0')
  return `UTC:${now.getUTCFullYear()},${now.getUTCMonth() + 1},${now.getUTCDate()},${pad(now.getUTCHours())},${pad(now.getUTCMinutes())},${pad(now.getUTCSeconds())}#`
}

const THREE_YEARS_MS = 3 * 365 * 24 * 3600 * 1000
const METHODS = ['GET', 'POST', 'PATCH', 'PUT'] as const
// The handler writes the string itself (not JSON-quoted); the serializer never sees it.
const Clock = { type: 'string', description: 'the clock, unquoted, though served as application/json', example: 'UTC:2026,1,5,09,30,00#' }

function header (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/**
 * The older form's HTTP devices (SCK 1.x): `/add` carries readings in X-SmartCitizenData as flat
 * objects keyed by the kit's sensor keys, identified by X-SmartCitizenMacADDR; `/datetime` tells the
 * clock. The firmware reads the unquoted clock string, served as application/json as it always was.
 */
export async function legacyRoutes (fastify: FastifyInstance, ctx: IngestRouteContext): Promise<void> {
  const sendClock = (reply: FastifyReply): FastifyReply => reply.type('application/json; charset=utf-8').header('cache-control', 'no-store').send(legacyClock(ctx.clock()))
  const tags = ['readings']

  const add = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const mac = header(request.headers['x-smartcitizenmacaddr'])?.trim().toLowerCase()
    const raw = header(request.headers['x-smartcitizendata'])
    if (mac === undefined || raw === undefined) return sendClock(reply)
    if (!/^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/.test(mac)) throw errors.badRequest('X-SmartCitizenMacADDR is not a MAC address', { 'X-SmartCitizenMacADDR': ['is invalid'] })
    let entries: unknown
    try {
      entries = JSON.parse(raw)
    } catch {
      throw errors.badRequest('X-SmartCitizenData is not JSON', { 'X-SmartCitizenData': ['is not a JSON array'] })
    }
    if (!Array.isArray(entries)) throw errors.badRequest('X-SmartCitizenData must be a JSON array', { 'X-SmartCitizenData': ['is not a JSON array'] })
    const device = await findDeviceByMac(ctx.database.sql, mac.replace(/-/g, ':'))
    if (device === null) throw errors.notFound('Device', mac)
    // Flat objects become the contract's shape; keys the kit does not know are left out, as the
    // established platform does, so a firmware's extra fields never reject its readings.
    const known = new Set((await ctx.database.sql<{ key: string }[]>`select key from kit_sensors where kit_id = ${device.kitId}`).map((r) => r.key))
    const data = entries.map((entry: unknown) => {
      const record = typeof entry === 'object' && entry !== null ? entry as Record<string, unknown> : {}
      const { timestamp, ...values } = record
      return {
        recorded_at: typeof timestamp === 'string' ? timestamp.trim() : timestamp,
        sensors: Object.entries(values).filter(([key]) => known.has(key)).map(([key, value]) => ({ id: key, value }))
      }
    }).filter((entry) => entry.sensors.length > 0)
    if (data.length > 0) {
      const now = ctx.clock()
      await ingestReadings({ ...ctx.ingest, limits: { ...ctx.ingest.limits, minTime: new Date(now.getTime() - THREE_YEARS_MS) } }, device, data)
    }
    return sendClock(reply)
  }

  // A route a method, so that each operation of the document has an id of its own.
  for (const method of METHODS) {
    const suffix = method === 'GET' ? '' : `${method[0]}${method.slice(1).toLowerCase()}`
    fastify.route({
      method,
      url: '/datetime',
      schema: { tags, summary: 'Older form: the server clock as UTC:YYYY,M,D,HH,MM,SS#', operationId: `legacyDatetime${suffix}`, response: { 200: Clock } },
      handler: async (_request, reply) => sendClock(reply)
    })
    fastify.route({
      method,
      url: '/add',
      schema: {
        tags,
        summary: 'Older form: readings in the X-SmartCitizenData header (JSON array of {<sensor key>: value, timestamp}), device by X-SmartCitizenMacADDR',
        description: 'Headers: `X-SmartCitizenMacADDR` (the MAC address of a registered device) and `X-SmartCitizenData` ' +
          '(a JSON array of objects keyed by the kit\'s sensor keys, with a `timestamp`). Without them the answer is the clock alone.',
        operationId: `legacyAdd${suffix}`,
        response: { 200: Clock, ...errorResponses(400, 404, 413, 422) }
      },
      handler: add
    })
  }
}
