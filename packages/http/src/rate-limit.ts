import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { sharedStateRedis } from './redis.js'
import { errors, isPrivileged } from '@esp/domain'

export interface RateLimitOptions {
  perMinute: number
  /** shared counters for several instances; in memory without it */
  redisUrl?: string | undefined
}

/**
 * Contract: Limits. Citizens are counted per user, anonymous callers per IP, researchers and
 * admins not at all. Runs after authentication, which resolves who is calling.
 */
export const rateLimitPlugin = fp(async (app: FastifyInstance, options: RateLimitOptions) => {
  const redis = options.redisUrl === undefined
    ? undefined
    : sharedStateRedis(options.redisUrl, (err) => { app.log.warn({ err }, 'Redis is unavailable: rate limits are not counted until it is back') }).redis
  if (redis !== undefined) app.addHook('onClose', async () => { await redis.quit().catch(() => undefined) })
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: options.perMinute,
    timeWindow: 60_000,
    ...(redis !== undefined ? { redis, nameSpace: 'esp-rate-limit:' } : {}),
    // A Redis outage must not take the API down: requests pass uncounted rather than failing.
    skipOnError: true,
    allowList: (request) => isPrivileged(request.viewer),
    keyGenerator: (request) => request.viewer === null ? `ip:${request.ip}` : `user:${request.viewer.id}`,
    errorResponseBuilder: (_request, context) => errors.tooManyRequests(Math.max(1, Math.ceil(context.ttl / 1000)))
  })
}, { name: 'esp-rate-limit', dependencies: ['esp-auth'] })
