import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { errors, MAX_BODY_DEPTH, nestedDeeperThan } from '@esp/domain'

/** The body limit of every route that does not set one: no route but bulk uploads takes more. */
export const DEFAULT_BODY_LIMIT = 64 * 1024

export interface BodyLimits {
  /** every route that sets none */
  default: number
  /** routes that take readings in bulk (BODY_LIMIT_BYTES) */
  large: number
  /** a multipart form: its one file (UPLOAD_MAX_BYTES) and fields as a default body holds them */
  multipart: number
}

declare module 'fastify' {
  interface FastifyInstance {
    bodyLimits: BodyLimits
  }
}

function declaredLength (request: FastifyRequest): number {
  const header = request.headers['content-length']
  return header === undefined ? 0 : Number(header)
}

/**
 * What a body may cost, judged before it is parsed: JSON is scanned for depth before JSON.parse
 * (a 5 MB body of `[` costs JSON.parse over a second of CPU, the scan microseconds), and a
 * multipart body, which @fastify/multipart reads itself past the route's bodyLimit, is refused at
 * once when its Content-Length is over the limit. Form bodies need nothing more: fast-querystring
 * builds flat keys (`a[b][c]` is one key), so their cost is their size, bounded by the limit.
 */
export const bodyGuardPlugin = fp(async (app: FastifyInstance, limits: BodyLimits) => {
  app.decorate('bodyLimits', limits)
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (nestedDeeperThan(body as Buffer, MAX_BODY_DEPTH)) {
      done(errors.badRequest(`The JSON body is nested too deeply (at most ${MAX_BODY_DEPTH} levels)`), undefined)
      return
    }
    parseJson(request, (body as Buffer).toString('utf8'), done)
  })
  // An answer given before its body was read (413, 401, a bad header) would reach few clients if
  // the socket closed under a body still arriving: the peer is reset, often before it has read
  // the answer. So the connection closes after the answer, but the rest of the body is read and
  // dropped first, for LINGER_MS at most (as nginx's lingering close).
  app.addHook('onSend', async (request, reply) => {
    if (request.raw.complete !== false || request.raw.socket === null) return
    reply.header('connection', 'close')
    lingerOnClose(request.raw.socket)
  })
  app.addHook('preParsing', async (request) => {
    if (request.headers['content-type']?.toLowerCase().startsWith('multipart/') !== true) return
    const limit = Math.max(request.routeOptions.bodyLimit ?? limits.default, limits.multipart)
    if (declaredLength(request) > limit) throw errors.payloadTooLarge(limit)
  })
}, { name: 'esp-body-guard' })

/** How long a connection answered before its body was read keeps reading (and dropping) that body. */
export const LINGER_MS = 2_000

const lingering = new WeakSet<Socket>()

/**
 * Node ends a connection answered with `Connection: close` by destroySoon(): done here, it ends
 * the writing side only, drops what the client still sends, and is destroyed when the client
 * closes its side or after LINGER_MS.
 */
function lingerOnClose (socket: Socket): void {
  if (lingering.has(socket)) return
  lingering.add(socket)
  socket.destroySoon = function (this: Socket) {
    if (this.writable) this.end()
    const timer = setTimeout(() => { this.destroy() }, LINGER_MS)
    timer.unref()
    this.once('end', () => { this.destroy() })
    this.once('close', () => { clearTimeout(timer) })
    // The request's parser still reads the socket: Node dumps the rest of an unread body.
    this.resume()
  }
}

/**
 * The `bodyLimit` of a route that takes readings in bulk: BODY_LIMIT_BYTES on the shared server,
 * where every other route keeps the small default.
 */
export function largeBodyLimit (app: FastifyInstance): number {
  return app.hasDecorator('bodyLimits') ? app.bodyLimits.large : app.initialConfig.bodyLimit ?? DEFAULT_BODY_LIMIT
}
