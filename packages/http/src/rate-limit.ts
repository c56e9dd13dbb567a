import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { trimOldest } from '@esp/db'
import { errors, isPrivileged } from '@esp/domain'
import { sharedStateRedis } from './redis.js'

export interface RateLimitOptions {
  perMinute: number
  /** shared counters for several instances; in memory without it */
  redisUrl?: string | undefined
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Rate-limit units the route costs beyond the first, known from its request before the
     * handler runs (the work of a route that streams, or of a page of many items).
     */
    cost?: number | ((request: FastifyRequest) => number)
  }
  interface FastifyRequest {
    /**
     * Takes `units` more of the caller's rate limit (a cheap request is one, taken on arrival):
     * an expensive request pays for its work before it starts, and is refused (429) when that
     * leaves the caller over its limit. A no-op without rate limits.
     */
    chargeRateLimit: (units: number) => Promise<void>
  }
}

const WINDOW_MS = 60_000
/** Callers remembered in memory at once: beyond it the oldest window is forgotten. */
const MEMORY_KEYS = 20_000

interface Count { current: number, ttl: number }
type Callback = (err: Error | null, result: Count) => void

// INCRBY, then the window starts with the first unit; the answer is the count and what is left of the window.
const ADD_LUA = `
local current = redis.call('INCRBY', KEYS[1], ARGV[1])
if current == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]); ttl = tonumber(ARGV[2]) end
return {current, ttl}`

type WeightedRedis = Redis & { espRateAdd: (key: string, units: number, windowMs: number) => Promise<[number, number]> }

/**
 * The counters behind @fastify/rate-limit, which count one a request, with weights besides: a
 * request adds the units its work costs (issue 33). In Redis with REDIS_URL, shared by every
 * instance; while Redis cannot answer, in this process, so a limit still holds per instance.
 */
export class WeightedStore {
  private readonly memory = new Map<string, { current: number, resetAt: number }>()
  private readonly redis: WeightedRedis | undefined

  constructor (redis?: Redis, private readonly prefix = 'esp-rate-limit:') {
    if (redis !== undefined && !('espRateAdd' in redis)) redis.defineCommand('espRateAdd', { numberOfKeys: 1, lua: ADD_LUA })
    this.redis = redis as WeightedRedis | undefined
  }

  /** Adds `units` to the key's window (a new one if it has none) and answers its count. */
  async add (key: string, units: number, windowMs = WINDOW_MS): Promise<Count> {
    if (this.redis !== undefined) {
      try {
        const [current, ttl] = await this.redis.espRateAdd(this.prefix + key, units, windowMs)
        return { current, ttl }
      } catch {
        // counted here below until Redis answers again
      }
    }
    return this.addHere(key, units, windowMs)
  }

  /** The count in this process (no Redis, or Redis away). */
  private addHere (key: string, units: number, windowMs: number): Count {
    const now = Date.now()
    let entry = this.memory.get(key)
    if (entry === undefined || entry.resetAt <= now) entry = { current: 0, resetAt: now + windowMs }
    entry.current += units
    // Re-inserted: the map's order is then the order of last use, and the least recent go first.
    this.memory.delete(key)
    this.memory.set(key, entry)
    trimOldest(this.memory, MEMORY_KEYS)
    return { current: entry.current, ttl: entry.resetAt - now }
  }

  // @fastify/rate-limit's store interface: one unit a request.
  incr (key: string, callback: Callback, timeWindow: number): void {
    // Without Redis, answered at once: no promise and no turn of the event loop per request.
    if (this.redis === undefined) {
      callback(null, this.addHere(key, 1, timeWindow))
      return
    }
    this.add(key, 1, timeWindow).then((count) => { callback(null, count) }, (err: unknown) => { callback(err instanceof Error ? err : new Error(String(err)), { current: 0, ttl: 0 }) })
  }

  child (): WeightedStore {
    return this
  }
}

/** Who a request is counted as: a user by id, an anonymous caller by address. */
const rateKey = (request: FastifyRequest): string => request.viewer === null ? `ip:${request.ip}` : `user:${request.viewer.id}`

/**
 * Contract: Limits. Citizens are counted per user, anonymous callers per IP, researchers and
 * admins not at all. Runs after authentication, which resolves who is calling. The limit is
 * weighted: a request costs one unit on arrival, an expensive one more once its work is known
 * (`request.chargeRateLimit`), and a 503 answered before the limit was looked at (backpressure,
 * a database away) still costs its caller one, so turning a client away never refills its budget.
 */
export const rateLimitPlugin = fp(async (app: FastifyInstance, options: RateLimitOptions) => {
  const redis = options.redisUrl === undefined
    ? undefined
    : sharedStateRedis(options.redisUrl, (err) => { app.log.warn({ err }, 'Redis is unavailable: rate limits are counted in this process until it is back') }).redis
  if (redis !== undefined) app.addHook('onClose', async () => { await redis.quit().catch(() => undefined) })
  const store = new WeightedStore(redis)
  const max = options.perMinute
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max,
    timeWindow: WINDOW_MS,
    // One instance for every route: a weighted charge and the per-request count share its counters.
    store: function Store () { return store } as unknown as new () => WeightedStore,
    skipOnError: true,
    allowList: (request) => isPrivileged(request.viewer),
    keyGenerator: rateKey,
    errorResponseBuilder: (_request, context) => errors.tooManyRequests(Math.max(1, Math.ceil(context.ttl / 1000)))
  })

  // No single request may cost more than half a minute's budget: the most expensive one the
  // bounds allow stays possible twice a minute, never refused outright.
  const largest = Math.max(0, Math.floor(max / 2))
  app.decorateRequest('chargeRateLimit', async function (this: FastifyRequest, units: number) {
    if (isPrivileged(this.viewer) || !(units > 0)) return
    const count = await store.add(rateKey(this), Math.min(largest, Math.ceil(units)))
    if (count.current > max) throw errors.tooManyRequests(Math.max(1, Math.ceil(count.ttl / 1000)))
  })

  // A route's own cost is paid before its handler starts; a list's page costs one unit more
  // every ITEMS_PER_UNIT items it may hold (per_page up to MAX_PER_PAGE), whatever the list.
  app.addHook('onRoute', (route) => {
    const cost = route.config?.cost ?? (hasPerPage(route.schema?.querystring) ? pageCost : undefined)
    if (cost === undefined) return
    const charge = async (request: FastifyRequest): Promise<void> => { await request.chargeRateLimit(typeof cost === 'number' ? cost : cost(request)) }
    route.preHandler = route.preHandler === undefined ? [charge] : [...(Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]), charge]
  })

  const counted = new WeakSet<FastifyRequest>()
  app.addHook('preHandler', async (request) => { counted.add(request) })
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode !== 503 || counted.has(request) || isPrivileged(request.viewer) || request.routeOptions.config.rateLimit === false) return
    await store.add(rateKey(request), 1).catch(() => undefined)
  })
}, { name: 'esp-rate-limit', dependencies: ['esp-auth'] })

/**
 * A streamed export's units beyond its first, paid when it starts: its rows cost CPU for as long
 * as it runs, so a caller gets about nine a minute (exports also hold one of a few slots).
 */
export const EXPORT_COST = 10
/** A search ranks trigram and full-text matches over three tables: two units more than a page of a list. */
export const SEARCH_COST = 2

/** Items of a list's page that cost one more unit of the rate limit (the default page of 25 costs none). */
export const ITEMS_PER_UNIT = 100

const hasPerPage = (schema: unknown): boolean => typeof schema === 'object' && schema !== null &&
  typeof (schema as { properties?: unknown }).properties === 'object' && 'per_page' in ((schema as { properties: object }).properties)

/** The units a list's page costs beyond its first: one per ITEMS_PER_UNIT items it may hold. */
export function pageCost (request: FastifyRequest): number {
  const perPage = Number((request.query as { per_page?: unknown } | undefined)?.per_page)
  return Number.isFinite(perPage) ? Math.floor(perPage / ITEMS_PER_UNIT) : 0
}

/** Without rate limits (tests of the shared behaviour), charges cost nothing. */
export function noRateLimit (app: FastifyInstance): void {
  app.decorateRequest('chargeRateLimit', async () => {})
}
