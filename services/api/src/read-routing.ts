import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod, RouteOptions } from 'fastify'
import { type Database, databaseUnavailableReason, historyRunner, ReadReplicas, type Replica, type Runner } from '@esp/db'
import { type Clock, WorldMap } from '@esp/domain'
import { Counter, Gauge } from '@esp/http'

/** What a route reads through: the primary's, or one read replica's. */
export interface DataSource {
  database: Database
  /** the time-series read path's runner on the same pool */
  history: Runner
  /** the precomputed world map, built from the same database */
  worldMap: WorldMap
  /** the replica, when it is not the primary */
  replica: Replica | undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Where this request reads: a read replica when read-routing.ts allows it, else the primary.
     * Writes always use the primary (ApiContext.database).
     */
    reads: DataSource
  }
}

/**
 * The read-only routes whose answers a replica may give: histories and rollups, device lists and
 * pages, the world maps, search, the streamed exports, user lists and profiles, the catalogue and
 * experiments. Every other route (writes, /me, sessions, password resets, OAuth applications,
 * uploads, CSV archive requests and links, import status) reads the primary.
 */
export const REPLICA_READ_ROUTES: ReadonlySet<string> = new Set([
  '/v0/devices',
  '/v0/devices/:id',
  '/v0/devices/world_map',
  '/v0/devices/fresh_world_map',
  '/v0/devices/compact_map',
  '/v0/devices/:device_id/readings',
  '/v0/devices/:device_id/readings/export',
  '/v0/readings/export',
  '/v0/search',
  '/v0/users',
  '/v0/users/:id_or_username',
  '/v0/sensors', '/v0/sensors/:id',
  '/v0/measurements', '/v0/measurements/:id',
  '/v0/kits', '/v0/kits/:id',
  '/v0/tags', '/v0/tags/:id',
  '/v0/tag_sensors', '/v0/tag_sensors/:id',
  '/v0/experiments', '/v0/experiments/:id', '/v0/experiment/:id'
])

/**
 * THE rule of which connection serves a request. A replica serves only
 *   - a GET or HEAD of a route in REPLICA_READ_ROUTES,
 *   - from a caller without credentials (nor a download link, which stands for its user),
 *   - when a replica is in rotation (no further behind than DATABASE_READ_MAX_LAG_SECONDS);
 * everything else reads the primary.
 *
 * Why anonymous callers only (read-your-writes): a caller with credentials may have written a
 * moment ago through any api instance behind the load balancer, or posted readings to ingest, so
 * remembering the WAL position of a user's writes in this process would not cover them; a
 * position shared between processes would cost a primary round trip per read, which is what a
 * replica saves. Reading the primary for them is always right. An anonymous caller has no writes
 * of its own to wait for (signing up is followed by logging in, and reset codes are read on the
 * primary), and its answers are public ones, which `Cache-Control: public, max-age=5` (30 for the
 * map) already lets any proxy serve that old; the replica's bound is the lag limit.
 */
export function mayReadReplica (request: FastifyRequest): boolean {
  return request.viewer === null && !viaExportLink(request) && (request.method === 'GET' || request.method === 'HEAD') &&
    REPLICA_READ_ROUTES.has(request.routeOptions.url ?? '')
}

/** An export through a link of POST …/export/link is its user's request (read-your-writes), though it carries no credential. */
const viaExportLink = (request: FastifyRequest): boolean =>
  typeof request.query === 'object' && request.query !== null && 'download_key' in request.query

export interface ReadRoutingOptions {
  primary: Database
  /** the primary's history runner and world map, shared with the rest of the api */
  primarySource: DataSource
  /** DATABASE_READ_URL, split; empty: everything reads the primary, as without replicas */
  urls: readonly string[]
  maxLagSeconds: number
  pollIntervalMs?: number | undefined
  clock: Clock
}

/**
 * Installs the rule: `request.reads` on every request, the replicas' pools, their poll and
 * metrics. Registered before the routes, whose handlers it wraps (onRoute). A replica that turns
 * out unreachable while it serves a request is taken out of rotation and the request runs again
 * on the primary, unless it already started answering, so a replica lost between two polls costs
 * no failed read.
 */
export async function installReadRouting (app: FastifyInstance, options: ReadRoutingOptions): Promise<void> {
  const primary = options.primarySource
  app.decorateRequest('reads', null as unknown as DataSource)
  app.addHook('onRequest', async (request) => { request.reads = primary })
  if (options.urls.length === 0) return

  const replicas = new ReadReplicas(options.primary, options.urls, {
    maxLagSeconds: options.maxLagSeconds,
    ...(options.pollIntervalMs === undefined ? {} : { pollIntervalMs: options.pollIntervalMs }),
    log: (level, fields, message) => { app.log[level]({ ...fields, component: 'read-replicas' }, message) }
  })
  const sources = new Map<Replica, DataSource>(replicas.list.map((replica) => [replica, {
    database: replica.database,
    history: historyRunner(replica.database),
    worldMap: new WorldMap(replica.database, options.clock),
    replica
  }]))
  app.addHook('onClose', async () => { await replicas.close() })

  const metrics = app.hasDecorator('metrics') ? app.metrics : undefined
  const registers = metrics === undefined ? [] : [metrics.registry]
  const served = new Counter({ name: 'esp_db_replica_requests_total', help: 'Requests a read replica served', labelNames: ['replica'], registers })
  const fellBack = new Counter({ name: 'esp_db_replica_fallbacks_total', help: 'Requests that found their read replica unreachable and ran again on the primary', labelNames: ['replica'], registers })
  if (metrics !== undefined) {
    const lagBytes = new Gauge({ name: 'esp_db_replica_lag_bytes', help: 'WAL bytes the primary had at the last poll that the replica had not replayed (NaN: unknown)', labelNames: ['replica'], registers })
    const lagSeconds = new Gauge({ name: 'esp_db_replica_lag_seconds', help: 'Seconds since the replica last held everything the primary had, at the poll\'s resolution (NaN: unknown)', labelNames: ['replica'], registers })
    const inRotation = new Gauge({ name: 'esp_db_replica_in_rotation', help: '1 while the replica serves reads, 0 while it is too far behind or unreachable', labelNames: ['replica'], registers })
    new Gauge({ name: 'esp_db_replica_max_lag_seconds', help: 'DATABASE_READ_MAX_LAG_SECONDS: a replica further behind is out of rotation', registers }).set(options.maxLagSeconds)
    metrics.onScrape(async () => {
      for (const status of replicas.statuses()) {
        const labels = { replica: status.label }
        lagBytes.set(labels, status.lagBytes ?? Number.NaN)
        lagSeconds.set(labels, status.lagSeconds ?? Number.NaN)
        inRotation.set(labels, status.inRotation ? 1 : 0)
      }
    })
  }

  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (!REPLICA_READ_ROUTES.has(route.url) || !methods.every((m) => m === 'GET' || m === 'HEAD')) return
    const handler = route.handler as (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>
    route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
      const replica = mayReadReplica(request) ? replicas.pick() : undefined
      const source = replica === undefined ? undefined : sources.get(replica)
      if (replica === undefined || source === undefined) return await handler.call(this, request, reply)
      request.reads = source
      served.inc({ replica: replica.label })
      try {
        return await handler.call(this, request, reply)
      } catch (err) {
        if (reply.sent) throw err
        const reason = databaseUnavailableReason(err)
        if (reason !== null) {
          replicas.markUnavailable(replica, reason)
          request.log.warn({ replica: replica.label, reason }, 'read replica unreachable: reading the primary')
        } else if (cancelledByRecovery(err)) {
          // The replay of a change on the primary (a vacuum, a chunk dropped) cancelled the read:
          // the replica stays in rotation, this read is answered by the primary.
          request.log.info({ replica: replica.label }, 'read cancelled by the replica\'s recovery: reading the primary')
        } else {
          throw err
        }
        fellBack.inc({ replica: replica.label })
        request.reads = primary
        return await handler.call(this, request, reply)
      }
    } as RouteHandlerMethod
  })

  await replicas.start()
}

/** SQLSTATE 40001 from a hot standby: `canceling statement due to conflict with recovery`. */
function cancelledByRecovery (err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '40001'
}
