import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * CORS as the established platform's proxy sets it (behaviour.md §0): credentials only for the
 * configured web origins, `*` for everyone else, preflights cached for 30 days.
 */
export const corsPlugin = fp(async (app: FastifyInstance, options: { credentialedOrigins: string[] }) => {
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
  const trusted = new Map(options.credentialedOrigins.map((origin) => [origin, { ...shared, origin, credentials: true }]))
  await app.register(cors, {
    hook: 'onRequest',
    delegator: (request, callback) => {
      const origin = request.headers.origin
      callback(null, (origin === undefined ? undefined : trusted.get(origin)) ?? anyone)
    }
  })
}, { name: 'esp-cors' })
