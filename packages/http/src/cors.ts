import cors from '@fastify/cors'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * CORS as the established platform's proxy sets it (behaviour.md §0): credentials only for the
 * configured web origins, `*` for everyone else, preflights cached for 30 days.
 */
export const corsPlugin = fp(async (app: FastifyInstance, options: { credentialedOrigins: string[] }) => {
  const shared = {
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Authorization', 'OnboardingSession', 'DNT', 'X-CustomHeader', 'Keep-Alive', 'User-Agent',
      'X-Requested-With', 'If-Modified-Since', 'If-None-Match', 'Cache-Control', 'Content-Type', 'Accept'],
    exposedHeaders: ['Link', 'Total', 'Per-Page', 'ETag', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
    maxAge: 2_592_000
  }
  // Made once, not per request: everyone's, and each configured origin's.
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
