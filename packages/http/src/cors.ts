import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { originOf } from './session-cookie.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The web origins allowed to send credentials (CORS_ORIGINS), written as a browser writes an
     * Origin header. The session cookie is handed to their pages and accepted from them for writes.
     */
    credentialedOrigins: ReadonlySet<string>
  }
}

/**
 * CORS as the established platform's proxy sets it (behaviour.md §0): credentials only for the
 * configured web origins, `*` for everyone else, preflights cached for 30 days. `*` never allows
 * credentials, so a page of any other origin cannot read what the session cookie would show it.
 *
 * The headers are written here, once per request from strings made once: @fastify/cors with a
 * per-request choice of options copied its options twice on every request (3 % of a cached read).
 * What it answered is kept: `Vary: Origin`, a preflight (any OPTIONS) without Origin or
 * Access-Control-Request-Method is a 400 `Invalid Preflight Request`, else a 204 with no body.
 */
export const corsPlugin = fp(async (app: FastifyInstance, options: { credentialedOrigins: string[] }) => {
  // As browsers send them (lower-case host, no default port), so a configured
  // `https://Example.org:443` still matches.
  const origins = new Set(options.credentialedOrigins.map((origin) => originOf(origin) ?? origin))
  app.decorate('credentialedOrigins', origins)
  const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].join(', ')
  const allowedHeaders = ['Authorization', 'OnboardingSession', 'DNT', 'X-CustomHeader', 'Keep-Alive', 'User-Agent',
    'X-Requested-With', 'If-Modified-Since', 'If-None-Match', 'Cache-Control', 'Content-Type', 'Accept'].join(', ')
  const exposedHeaders = ['Link', 'Total', 'Per-Page', 'ETag', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'].join(', ')
  const maxAge = String(2_592_000)
  app.addHook('onRequest', (request, reply, done) => {
    const origin = request.headers.origin
    const trusted = origin !== undefined && origins.has(origin)
    const vary = reply.getHeader('vary')
    reply.header('vary', vary === undefined ? 'Origin' : `${String(vary)}, Origin`)
    reply.header('access-control-allow-origin', trusted ? origin : '*')
    if (trusted) reply.header('access-control-allow-credentials', 'true')
    reply.header('access-control-expose-headers', exposedHeaders)
    if (request.raw.method !== 'OPTIONS') {
      done()
      return
    }
    // Answered here, before authentication: a browser's preflight carries no credentials.
    if (origin === undefined || request.headers['access-control-request-method'] === undefined) {
      void reply.code(400).type('text/plain').send('Invalid Preflight Request')
      return
    }
    void reply.header('access-control-allow-methods', methods).header('access-control-allow-headers', allowedHeaders)
      .header('access-control-max-age', maxAge).code(204).header('content-length', '0').send()
  })
  // Lets the router accept OPTIONS on every path; the hook above has answered it already.
  app.options('*', { schema: { hide: true } }, async (_request, reply) => await reply.send())
}, { name: 'esp-cors' })
