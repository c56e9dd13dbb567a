import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { errors } from '@esp/domain'
import { sendError } from './error-handler.js'

/** Rack::JSONP's rule: a dotted JavaScript identifier path, nothing else (behaviour.md §0). */
const CALLBACK = /^[a-zA-Z_$](?:\.?[\w$])*$/
const CALLBACK_MAX = 128

interface Envelope { pretty: boolean, callback: string | undefined, credentials: boolean }

declare module 'fastify' {
  interface FastifyRequest {
    envelope: Envelope | null
  }
}

/** Whether the answer is rewritten whole here (pretty, or JSON-P): such an answer is never streamed. */
export const rewrittenWhole = (request: FastifyRequest): boolean =>
  request.envelope !== null && (request.envelope.pretty || request.envelope.callback !== undefined)

/** Read from the raw query: route schemas strip keys they do not declare from request.query. */
function readEnvelope (request: FastifyRequest): Envelope {
  const at = request.url.indexOf('?')
  const headerCredentials = request.headers.authorization !== undefined
  if (at === -1) return { pretty: false, callback: undefined, credentials: headerCredentials }
  const params = new URLSearchParams(request.url.slice(at + 1))
  const callback = request.method === 'GET' ? params.get('callback') ?? undefined : undefined
  return {
    pretty: params.get('pretty') === 'true',
    callback: callback === '' ? undefined : callback,
    // The places the auth plugin reads credentials from, decoded as it decodes them.
    credentials: headerCredentials || params.has('access_token') || params.has('bearer_token')
  }
}

function isJson (reply: FastifyReply): boolean {
  const type = reply.getHeader('content-type')
  return typeof type === 'string' && type.includes('application/json')
}

/**
 * Envelope rules for every route: `pretty=true` indents; the older form's `callback` wraps GET
 * responses in JSON-P. The callback is checked before the handler runs, the body is prefixed with
 * a comment (defeats content-sniffing attacks such as Rosetta Flash) and U+2028/9 are escaped.
 *
 * JSON-P is answered to anonymous requests only. A script tag is not bound by the same-origin
 * policy, and a browser sends the Basic credentials it holds with it, so any page could read a
 * JSON-P answer made for those credentials (`/me` and its e-mail, private devices). A callback
 * with credentials is a 400 before authentication runs, so nothing private is ever wrapped.
 */
export const representationPlugin = fp(async (app: FastifyInstance) => {
  app.decorateRequest('envelope', null)
  app.addHook('onRequest', async (request, reply) => {
    const envelope = readEnvelope(request)
    request.envelope = envelope
    const callback = envelope.callback
    if (callback === undefined) return
    if (callback.length > CALLBACK_MAX || !CALLBACK.test(callback)) {
      envelope.callback = undefined
      return sendError(reply, errors.badRequest('The callback parameter must be a JavaScript identifier path', { callback: ['is invalid'] }))
    }
    if (envelope.credentials) {
      envelope.callback = undefined
      return sendError(reply, errors.badRequest('JSON-P answers carry public data only: send a request with a callback without credentials', { callback: ['cannot be combined with credentials'] }))
    }
  })

  app.addHook('onSend', async (request, reply, payload) => {
    const envelope = request.envelope ?? readEnvelope(request)
    if ((!envelope.pretty && envelope.callback === undefined) || !isJson(reply)) return payload
    // A body a route wrote as bytes itself (long rollups) is rewritten as its text; an encoded one
    // (the world map's gzip) is not JSON text, and those routes send the plain text here instead.
    if (Buffer.isBuffer(payload) && reply.getHeader('content-encoding') !== undefined) return payload
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null
    if (text === null) return payload
    let body = text
    if (envelope.pretty) {
      try {
        body = JSON.stringify(JSON.parse(body), null, 2)
      } catch {
        // not JSON after all: leave it as it is
      }
    }
    const callback = envelope.callback
    if (callback !== undefined && reply.statusCode !== 204 && reply.statusCode !== 304) {
      reply.type('application/javascript; charset=utf-8')
      reply.header('x-content-type-options', 'nosniff')
      body = `/**/${callback}(${body.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')})`
    }
    return body
  })
}, { name: 'esp-representation' })
