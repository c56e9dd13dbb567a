import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/** How long a shared cache (a CDN, the proxy) may keep an anonymous answer: readings move every minute. */
export const PUBLIC_MAX_AGE_SECONDS = 5

/** True when an If-None-Match header names the entity tag (weak comparison, RFC 9110 §13.1.2). */
export function etagMatches (ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false
  const bare = etag.replace(/^W\//, '')
  return ifNoneMatch.split(',').some((tag) => { const t = tag.trim(); return t === '*' || t.replace(/^W\//, '') === bare })
}

/** The weak entity tag of a body as sent. */
const etagOf = (body: Buffer | string): string => `W/"${createHash('sha1').update(body).digest('base64url')}"`

const encodedTexts = new WeakMap<{ readonly json: string }, { body: Buffer, etag: string }>()

/**
 * Sends JSON text made once (the reference data's representations) as bytes encoded once, with
 * its entity tag made once too: nothing is serialized, encoded or hashed again per request (a
 * string body is encoded again on every write). The hook below keeps the tag.
 */
export function sendJsonText (reply: FastifyReply, text: { readonly json: string }): Buffer {
  let encoded = encodedTexts.get(text)
  if (encoded === undefined) {
    const body = Buffer.from(text.json)
    encoded = { body, etag: etagOf(body) }
    encodedTexts.set(text, encoded)
  }
  reply.header('etag', encoded.etag).type('application/json; charset=utf-8')
  return encoded.body
}

const credentialed = (request: FastifyRequest): boolean =>
  request.viewer !== null || request.headers.authorization !== undefined || /[?&](access_token|bearer_token)=/.test(request.url)

/**
 * HTTP caching for reads (GET and HEAD answered 200): an entity tag of the body as sent, and 304
 * Not Modified when the client already has it, so a dashboard polling an unchanged device gets
 * headers only. Cache-Control lets shared caches keep an anonymous answer briefly (`Vary:
 * Authorization, Cookie`, so no cache hands it to a caller signed in by a token or the session cookie) and keeps every credentialed one
 * private. A route that set its own ETag or Cache-Control (the world map, uploads, the root) keeps
 * them. Registered last, so the tag is of the final body (pretty, JSON-P).
 */
export const httpCachePlugin = fp(async (app: FastifyInstance) => {
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if ((request.method !== 'GET' && request.method !== 'HEAD') || reply.statusCode !== 200) return payload
    const isPrivate = credentialed(request)
    if (!reply.hasHeader('cache-control')) {
      reply.header('cache-control', isPrivate ? 'private, max-age=0, must-revalidate' : `public, max-age=${PUBLIC_MAX_AGE_SECONDS}`)
    }
    if (!isPrivate) {
      const vary = reply.getHeader('vary')
      reply.header('vary', vary === undefined ? 'Authorization, Cookie' : `${String(vary)}, Authorization, Cookie`)
    }
    // Streams (exports, CSV) are not read twice to be tagged.
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload
    let etag = reply.getHeader('etag')
    let body = payload
    if (etag === undefined) {
      // Encoded once: hashed, then sent as these bytes (a string would be encoded again on the
      // socket, and hashing a string encodes it first: a third of a page's tagging time).
      body = typeof payload === 'string' ? Buffer.from(payload) : payload
      etag = etagOf(body)
      reply.header('etag', etag)
    }
    if (etagMatches(request.headers['if-none-match'], String(etag))) {
      reply.code(304)
      reply.removeHeader('content-type')
      reply.removeHeader('content-length')
      return ''
    }
    return body
  })
}, { name: 'esp-http-cache' })
