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
  app.addHook('preParsing', async (request) => {
    if (request.headers['content-type']?.toLowerCase().startsWith('multipart/') !== true) return
    const limit = Math.max(request.routeOptions.bodyLimit ?? limits.default, limits.multipart)
    if (declaredLength(request) > limit) throw errors.payloadTooLarge(limit)
  })
}, { name: 'esp-body-guard' })

/**
 * The `bodyLimit` of a route that takes readings in bulk: BODY_LIMIT_BYTES on the shared server,
 * where every other route keeps the small default.
 */
export function largeBodyLimit (app: FastifyInstance): number {
  return app.hasDecorator('bodyLimits') ? app.bodyLimits.large : app.initialConfig.bodyLimit ?? DEFAULT_BODY_LIMIT
}
