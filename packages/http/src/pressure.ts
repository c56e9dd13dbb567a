import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply } from 'fastify'
import fp from 'fastify-plugin'
import { Gauge } from 'prom-client'
import { type Handle, ping, withDeadline } from '@esp/db'
import { ApiError } from '@esp/domain'
import { sendError } from './error-handler.js'
import { METRICS_PATH } from './metrics.js'

export interface PressureOptions {
  /** mean event-loop delay over a sample that turns requests away; 0 turns the check off */
  maxEventLoopDelayMs: number
  /** how long a probe query may wait for a pool connection and answer; 0 turns the check off */
  maxDbWaitMs: number
  retryAfterSeconds: number
  /** the pool the probe goes through; without it only the event loop is watched */
  database?: Handle | undefined
  /** how often the event loop is sampled and the pool probed (1000 ms unless a test needs it faster) */
  sampleIntervalMs?: number
  /** an unavailable database is its business (a true 503 at once), not a saturated pool */
  health?: HealthView | undefined
}

/** Routes that answer under pressure: a liveness probe that failed would get the process killed,
 * and metrics are what shows the pressure. */
/** What the pressure check reads of the process's DatabaseHealth (database-health.ts, which imports this file). */
export interface HealthView {
  readonly available: boolean
  note: (err: unknown) => boolean
}

export const PRESSURE_EXEMPT = new Set(['/health/live', METRICS_PATH])

/**
 * The pool is saturated when a trivial query cannot get a connection and finish in time. Only
 * one probe is out at once, so a saturated pool is not fed more probes; one that has not come
 * back by the deadline counts as saturated until it does.
 */
export function poolProbe (database: Handle, maxWaitMs: number, health?: HealthView): { healthy: () => Promise<boolean>, lastSeconds: () => number } {
  let pending: Promise<number> | undefined
  let last = 0
  return {
    lastSeconds: () => last,
    healthy: async () => {
      if (health !== undefined && !health.available) return true
      if (pending === undefined) {
        const started = performance.now()
        // A failed probe on an unreachable database turns it over to the health (which says so);
        // any other failure counts as saturation.
        pending = ping(database).then(() => (performance.now() - started) / 1000, (err: unknown) => health?.note(err) === true ? 0 : Number.POSITIVE_INFINITY)
          .then((seconds) => { last = seconds; return seconds })
          .finally(() => { pending = undefined })
      }
      const seconds = await withDeadline(pending, maxWaitMs, () => Number.POSITIVE_INFINITY)
      if (!Number.isFinite(seconds)) last = Math.max(last, maxWaitMs / 1000)
      return seconds * 1000 <= maxWaitMs || (health !== undefined && !health.available)
    }
  }
}

const REASONS: Record<string, string> = {
  eventLoopDelay: 'the event loop is saturated',
  eventLoopUtilization: 'the event loop is saturated',
  healthCheck: 'the database pool is saturated',
  heapUsedBytes: 'memory is short',
  rssBytes: 'memory is short'
}

/**
 * Backpressure (@fastify/under-pressure): when the event loop lags or the database pool cannot
 * serve a probe in time, requests are answered at once with 503 and Retry-After in the one error
 * shape, instead of queueing without bound behind the ones already in flight.
 */
export const pressurePlugin = fp(async (app: FastifyInstance, options: PressureOptions) => {
  const probe = options.database !== undefined && options.maxDbWaitMs > 0 ? poolProbe(options.database, options.maxDbWaitMs, options.health) : undefined
  if (probe !== undefined && app.hasDecorator('metrics')) {
    new Gauge({ name: 'esp_db_pool_probe_seconds', help: 'Time the last pressure probe query took to get a pool connection and answer', registers: [app.metrics.registry], collect () { this.set(probe.lastSeconds()) } })
  }
  // Exempt routes bring their own handler, which lets the request through.
  app.addHook('onRoute', (route) => {
    const path = route.url ?? route.path
    if (PRESSURE_EXEMPT.has(path) || route.config?.ungated === true) Object.assign(route.config ??= {}, { pressureHandler: () => undefined })
  })
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    sampleInterval: options.sampleIntervalMs ?? 1000,
    ...(probe !== undefined ? { healthCheck: probe.healthy, healthCheckInterval: options.sampleIntervalMs ?? 1000 } : {}),
    // Sent from the onRequest hook itself: the hooks after it (authentication, which queries the
    // pool) and the handler never run for a request turned away.
    pressureHandler: async (_request, reply: FastifyReply, type: string) => {
      if (app.hasDecorator('metrics')) app.metrics.pressureRejections.inc({ reason: type })
      sendError(reply, new ApiError({
        code: 'ESP_UNDER_PRESSURE',
        id: 'service_unavailable',
        statusCode: 503,
        message: `Service Unavailable: ${REASONS[type] ?? 'the service is overloaded'}, retry in ${options.retryAfterSeconds} seconds`,
        headers: { 'retry-after': String(options.retryAfterSeconds) }
      }))
    }
  })
}, { name: 'esp-pressure' })
