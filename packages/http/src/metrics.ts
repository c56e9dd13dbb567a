import { hostname } from 'node:os'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { Type } from '@sinclair/typebox'
import { type Handle, poolConnections } from '@esp/db'
import { errors, safeEqual } from '@esp/domain'
import { errorResponses } from './error-body.js'
import { sendError } from './error-handler.js'

/**
 * The metrics every service shares, on its own registry (one per server: tests build many in one
 * process). Services add their own series to `registry` with the prom-client classes this package
 * re-exports (the ingest service reads its MQTT counters on scrape).
 *
 * - `readingsStored`: `inc(n)` with the rows of each committed write.
 * - `onScrape(fn)`: runs `fn` before each scrape to refresh gauges that need a query (queue depth,
 *   pool use).
 */
export interface PlatformMetrics {
  readonly registry: Registry
  readonly readingsStored: Counter
  readonly pressureRejections: Counter<'reason'>
  /** credential checks refused before they ran: the caller was locked out, or had too many in flight */
  readonly authThrottled: Counter<'reason'>
  onScrape: (collect: () => Promise<void>) => void
  /** the text a scrape returns, after every onScrape collector ran */
  scrape: () => Promise<string>
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: PlatformMetrics
  }
}

export const METRICS_PATH = '/metrics'

export function createMetrics (onCollectError: (err: unknown) => void = () => {}): PlatformMetrics {
  const registry = new Registry()
  const registers = [registry]
  // Process metrics (CPU, memory, event-loop lag, GC) with the same prefix as ours.
  collectDefaultMetrics({ register: registry, prefix: 'esp_' })
  const collectors: Array<() => Promise<void>> = []
  return {
    registry,
    readingsStored: new Counter({ name: 'esp_readings_stored_total', help: 'Readings committed to the database (new rows; rate() gives readings stored per second)', registers }),
    pressureRejections: new Counter({ name: 'esp_pressure_rejections_total', help: 'Requests answered 503 because the process was under pressure, by reason', labelNames: ['reason'], registers }),
    authThrottled: new Counter({ name: 'esp_auth_throttled_total', help: 'Credential checks (logins, tokens, reset codes, MQTT) refused with 429 or a refused CONNACK after too many failures, by reason (locked, busy)', labelNames: ['reason'], registers }),
    onScrape: (collect) => { collectors.push(collect) },
    scrape: async () => {
      // One failing source (a database hiccup) must not blank the whole scrape.
      const results = await Promise.allSettled(collectors.map(async (collect) => { await collect() }))
      for (const result of results) if (result.status === 'rejected') onCollectError(result.reason)
      return await registry.metrics()
    }
  }
}

/** The service's own pool: its size, and the label its connections carry in pg_stat_activity. */
export interface PoolSource {
  database: Handle
  max: number
  applicationName: string
}

/**
 * A label unique to this process, so pg_stat_activity tells its connections from those of the
 * other replicas (PostgreSQL keeps 63 bytes of it).
 */
export function processApplicationName (service: string): string {
  return `${service}@${hostname()}:${process.pid}`.slice(0, 63)
}

export interface MetricsOptions {
  /** when set, a scrape needs `Authorization: Bearer <token>` */
  token?: string | undefined
  pool?: PoolSource | undefined
}

/**
 * The metrics decorator, the HTTP request metrics by route pattern, and the collectors run on scrape.
 * Registered before the routes, so every route is measured.
 */
export const metricsPlugin = fp(async (app: FastifyInstance, options: MetricsOptions) => {
  const metrics = createMetrics((err) => { app.log.warn({ err }, 'a metrics source failed') })
  app.decorate('metrics', metrics)
  const registers = [metrics.registry]
  const labelNames = ['method', 'route', 'status_code'] as const
  const requests = new Counter({ name: 'esp_http_requests_total', help: 'HTTP requests answered, by route pattern and status', labelNames, registers })
  const duration = new Histogram({
    name: 'esp_http_request_duration_seconds',
    help: 'HTTP request latency, by route pattern and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers
  })
  // Each series' children made once: labels given with every observation were hashed every time.
  const series = new Map<string, { count: { inc: () => void }, time: { observe: (value: number) => void } }>()
  app.addHook('onResponse', async (request, reply) => {
    // The pattern, never the path: ids in paths would make a series per device.
    const route = request.routeOptions.url ?? 'unmatched'
    const key = `${request.method} ${reply.statusCode} ${route}`
    let one = series.get(key)
    if (one === undefined) {
      const labels = { method: request.method, route, status_code: String(reply.statusCode) }
      one = { count: requests.labels(labels), time: duration.labels(labels) }
      series.set(key, one)
    }
    one.count.inc()
    one.time.observe(reply.elapsedTime / 1000)
  })

  const pool = options.pool
  if (pool !== undefined) {
    new Gauge({ name: 'esp_db_pool_max', help: 'Connections this process may open to the database', registers }).set(pool.max)
    const connections = new Gauge({ name: 'esp_db_pool_connections', help: 'Open database connections of this process, by state (busy: running a query or in a transaction)', labelNames: ['state'], registers })
    metrics.onScrape(async () => {
      const { busy, idle } = await poolConnections(pool.database, pool.applicationName)
      connections.set({ state: 'busy' }, busy)
      connections.set({ state: 'idle' }, idle)
    })
  }
}, { name: 'esp-metrics' })

/** GET /metrics; registered after the pressure plugin, which exempts it (it shows the pressure). */
export async function metricsRoute (app: FastifyInstance, options: Pick<MetricsOptions, 'token'>): Promise<void> {
  const metrics = app.metrics
  const throttle = app.hasDecorator('authThrottle') ? app.authThrottle : undefined
  app.get(METRICS_PATH, {
    // The Bearer here is the metrics token, not a user's access token.
    config: { rateLimit: false, authenticate: false },
    schema: {
      tags: ['health'],
      summary: 'Prometheus metrics of this process',
      operationId: 'metrics',
      // METRICS_TOKEN, when set, as a bearer token
      security: [{}, { bearer: [] }],
      response: {
        200: { description: 'the Prometheus text format', content: { 'text/plain': { schema: Type.String() } } },
        ...errorResponses(401, 429)
      }
    }
  }, async (request, reply) => {
    const token = options.token
    if (token !== undefined) {
      // A wrong metrics token counts like any failed credential, where the service checks them. The
      // operator chose it (16 characters at least), so unlike an issued token it is refused, not
      // compared, while the address is locked.
      const check = async (): Promise<true | null> => safeEqual(request.headers.authorization ?? '', `Bearer ${token}`) ? true : null
      const valid = throttle === undefined ? await check() : await throttle.gate(request.ip).verify(undefined, check)
      if (valid === null) return sendError(reply.header('www-authenticate', 'Bearer realm="metrics"'), errors.unauthorized('This endpoint needs the metrics token'))
    }
    const text = await metrics.scrape()
    return reply.type(metrics.registry.contentType).header('cache-control', 'no-store').send(text)
  })
}
