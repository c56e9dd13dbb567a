import { Redis } from 'ioredis'

/**
 * A Redis connection for state that is only shared for accuracy (rate limits, failed-login
 * counts): no offline queue and a short timeout, so that while Redis is away a request falls back
 * at once instead of waiting for it, and the outage is logged once a minute at most, not on every
 * reconnection attempt. ioredis reconnects by itself.
 */
export function sharedStateRedis (url: string, warn: (err: unknown) => void): { redis: Redis, warn: (err: unknown) => void } {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 500 })
  let lastWarned = 0
  const throttledWarn = (err: unknown): void => {
    if (Date.now() - lastWarned < 60_000) return
    lastWarned = Date.now()
    warn(err)
  }
  redis.on('error', throttledWarn)
  return { redis, warn: throttledWarn }
}
