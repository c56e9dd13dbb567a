import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { errors } from '@esp/domain'

/**
 * The deepest JSON body the platform reads. The deepest thing a route keeps is free JSON (a
 * device's `meta`, at most 64 levels: domain/src/validation/free-json.ts) two objects down
 * (`postprocessing_attributes.meta`); the spare levels keep that check's own 422, which names the
 * field. A deeper body could only be refused later, after a JSON.parse whose cost grows with it.
 */
export const MAX_BODY_DEPTH = 72

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

// Bytes, not characters: UTF-8 continuation bytes are never ASCII, so no multi-byte character
// can pass for a quote or a bracket.
const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

/**
 * Whether a JSON text opens more than `max` arrays or objects at once, by one pass over its bytes
 * that stops at the first level too many. Malformed text is JSON.parse's to refuse: up to its
 * first error a text is a valid prefix, whose depth this counts exactly, so what passes here
 * costs JSON.parse no more than a body `max` levels deep.
 */
export function nestedDeeperThan (bytes: Uint8Array, max: number): boolean {
  let depth = 0
  const length = bytes.length
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]
    if (byte === QUOTE) {
      for (i++; i < length; i++) {
        const inner = bytes[i]
        if (inner === BACKSLASH) i++
        else if (inner === QUOTE) break
      }
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
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
