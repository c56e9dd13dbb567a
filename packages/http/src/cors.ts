import cors from '@fastify/cors'
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
 */
export const corsPlugin = fp(async (app: FastifyInstance, options: { credentialedOrigins: string[] }) => {
  // As browsers send them (lower-case host, no default port), so a configured
  // `https://Example.org:443` still matches.
  const origins = new Set(options.credentialedOrigins.map((origin) => originOf(origin) ?? origin))
  app.decorate('credentialedOrigins', origins)
  // Made once, not per request: everyone's options and each configured origin's, the lists
  // joined already (the plugin joins arrays again on every request).
  const shared = {
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].join(', '),
    allowedHeaders: ['Authorization', 'OnboardingSession', 'DNT', 'X-CustomHeader', 'Keep-Alive', 'User-Agent',
      'X-Requested-With', 'If-Modified-Since', 'If-None-Match', 'Cache-Control', 'Content-Type', 'Accept'].join(', '),
    exposedHeaders: ['Link', 'Total', 'Per-Page', 'ETag', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'].join(', '),
    maxAge: 2_592_000
  }
  const anyone = { ...shared, origin: '*', credentials: false }
  const trusted = new Map([...origins].map((origin) => [origin, { ...shared, origin, credentials: true }]))
  await app.register(cors, {
    hook: 'onRequest',
    delegator: (request, callback) => {
      const origin = request.headers.origin
      callback(null, (origin === undefined ? undefined : trusted.get(origin)) ?? anyone)
    }
  })
}, { name: 'esp-cors' })
