import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { legacyAddDevice, legacyMac, storeLegacyReadings, timeBoundsText } from '@esp/domain'
import { errorResponses } from '@esp/http'
import type { IngestRouteContext } from '../../context.js'

/** `UTC:YYYY,M,D,HH,MM,SS#`: month and day unpadded, time padded (behaviour.md §6.3). */
export function legacyClock (now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0')
  return `UTC:${now.getUTCFullYear()},${now.getUTCMonth() + 1},${now.getUTCDate()},${pad(now.getUTCHours())},${pad(now.getUTCMinutes())},${pad(now.getUTCSeconds())}#`
}

const METHODS = ['GET', 'POST', 'PATCH', 'PUT'] as const
/** Stores under way after their answer; past this many a request waits for its own before answering. */
const MAX_PENDING = 64
// The handler writes the string itself (not JSON-quoted); the serializer never sees it.
const Clock = { type: 'string', description: 'the clock, unquoted, though served as application/json', example: 'UTC:2026,1,5,09,30,00#' }

function header (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

interface AddRequest { address: string, mac: string, data: string, apiKey: string | undefined, log: FastifyBaseLogger }

/**
 * The older form's HTTP devices (SCK 1.x): `/add` carries readings in X-SmartCitizenData as flat
 * objects keyed by the kit's sensor keys, identified by X-SmartCitizenMacADDR; `/datetime` tells the
 * clock. The firmware reads the unquoted clock string, served as application/json as it always was.
 *
 * `/add` answers the clock whatever happens, as the reference does (behaviour.md §6.3), and answers
 * it before the device is looked up: neither the answer nor its timing can tell whether a MAC
 * address exists. Readings are stored only into a device that speaks /add (legacyAddDevice), and
 * a MAC that finds none counts as a failed device secret of the caller's address, in the count
 * MQTT's guessed tokens share; a locked-out address stores nothing.
 */
export async function legacyRoutes (fastify: FastifyInstance, ctx: IngestRouteContext): Promise<void> {
  const sendClock = (reply: FastifyReply): FastifyReply => reply.type('application/json; charset=utf-8').header('cache-control', 'no-store').send(legacyClock(ctx.clock()))
  const tags = ['readings']
  const pending = ctx.legacyPending
  // Shutdown waits for the stores already answered for.
  fastify.addHook('onClose', async () => { await Promise.allSettled([...pending]) })

  const store = async ({ address, mac, data, apiKey, log }: AddRequest): Promise<void> => {
    if (ctx.guesses.locked(address)) return
    const device = await legacyAddDevice(ctx.database, mac, apiKey)
    if (device === null) {
      // Each distinct MAC once, as a token: a kit repeating the MAC of an archived device is one guess.
      await ctx.guesses.failed(address, `mac:${legacyMac(mac) ?? mac.trim().toLowerCase().slice(0, 64)}`)
      return
    }
    // Keys no sensor has are skipped and the rest stored, within the bounds of every path; what was
    // not stored goes to the device's ingest status, since the kit reads nothing but the clock.
    const outcome = await storeLegacyReadings(ctx.ingest, device, data)
    if (outcome?.status === 'rejected') log.debug({ reason: outcome.reason }, 'legacy readings rejected')
  }

  const add = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const mac = header(request.headers['x-smartcitizenmacaddr'])
    const data = header(request.headers['x-smartcitizendata'])
    if (mac !== undefined && data !== undefined) {
      const work = store({ address: request.ip, mac, data, apiKey: header(request.headers['x-smartcitizenapikey']), log: request.log })
        .catch((err: unknown) => { request.log.warn({ err }, 'legacy readings not stored') })
        .finally(() => { pending.delete(work) })
      pending.add(work)
      // Backpressure when stores pile up: this request's answer then waits for its own.
      if (pending.size > MAX_PENDING) await work
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
        description: 'Headers: `X-SmartCitizenMacADDR` (the MAC address of the device) and `X-SmartCitizenData` ' +
          `(a JSON array of objects keyed by sensor keys, with a \`timestamp\` ${timeBoundsText(ctx.ingest.limits)}). A key no sensor has is skipped and the rest stored; ` +
          'an entry with a bad time or value refuses the whole header. Either is noted in the device\'s `ingest` status for its owner. The answer is always the clock, ' +
          'before and whatever the readings become, as the older platform answered. Readings are stored only into an active device whose kit is a ' +
          'SmartCitizen Kit 1.0 or 1.1 (kit_id 2 or 3: the owner\'s opt-in), and into a private one only when `X-SmartCitizenApiKey` is its owner\'s ' +
          '`legacy_api_key`. A MAC address that finds no such device counts as a failed credential of the caller\'s address, with guessed MQTT device tokens.',
        operationId: `legacyAdd${suffix}`,
        response: { 200: Clock, ...errorResponses(413, 429) }
      },
      handler: add
    })
  }
}
