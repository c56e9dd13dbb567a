import { hostname } from 'node:os'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type Database, openReadingsWriter } from '@esp/db'
import { AuthThrottle, type Clock, DEFAULT_THROTTLE, DeviceTokenGuesses, type IngestContext, IngestStatusLog, MemoryThrottleStore, MessageIngest, OLDEST_READING, systemClock } from '@esp/domain'
import { brokerPlugin, type MqttListenOptions } from './broker/broker-plugin.js'
import { newStats, type MqttStats } from './broker/device-messages.js'
import { clusterBrokerPlugin } from './broker/cluster.js'
import { brokerAuthListener } from './broker/cluster-auth.js'
import { externalBrokerPlugin } from './broker/external.js'
import { EVERYONE, LiveFeed, type Publish, SubscriberIndex } from './broker/live-feed.js'
import type { IngestRouteContext } from './context.js'
import { legacyRoutes } from './routes/v0/legacy.js'
import { readingRoutes } from './routes/v0/readings.js'
import { ingestMetrics } from './metrics.js'

/** Scale-out mode: read devices from an external broker (MQTT_BROKER_URL) instead of embedding one. */
export interface ExternalBroker {
  url: string
  clientId?: string | undefined
  group: string
  connections: number
}

/** Clustered mode: consume the device messages of a RabbitMQ cluster (BROKER_AMQP_URLS). */
export interface BrokerCluster {
  urls: readonly string[]
  queue: string
  prefetch: number
  /** the cluster's anonymous MQTT user, as which devices log in (default `device`) */
  deviceUser?: string | undefined
  /** where the cluster's HTTP auth backend listens: never the public port (default 127.0.0.1:3001) */
  auth?: { host: string, port: number, secret?: string | undefined } | undefined
}

export interface IngestDeps {
  database: Database
  /** where the embedded broker listens; tests leave it out and drive the broker in-process */
  mqtt?: MqttListenOptions | undefined
  /** when set, no broker is embedded */
  externalBroker?: ExternalBroker | undefined
  /** when set, no broker is embedded either */
  brokerCluster?: BrokerCluster | undefined
  maxValues: number
  maxFutureSeconds: number
  /** largest JSON readings payload over MQTT (the HTTP body limit) */
  maxPayloadBytes?: number
  /** how often what was not stored is merged into the devices' ingest status (default 5 s) */
  statusIntervalMs?: number
  clock?: Clock
}

declare module 'fastify' {
  interface FastifyInstance {
    /** counters of the MQTT side (metrics) */
    mqttStats: MqttStats
    /** the batcher of device messages; `pending` is the MQTT backlog awaiting commit (metrics) */
    mqttIngest: MessageIngest
    /** resolves once every /add already answered has stored (or dropped) its readings */
    legacyAddSettled: () => Promise<void>
  }
}

/**
 * Device-facing service: posted readings and MQTT, embedded (Aedes) or through an external broker
 * (DESIGN.md). Not encapsulated, so the launcher sees the broker and the port it took.
 */
export const ingestService = fp(async (app: FastifyInstance, deps: IngestDeps) => {
  const clock = deps.clock ?? systemClock
  // Partitions for the coming months exist before any device needs them (native engine).
  const now = clock().getTime()
  const writer = await openReadingsWriter(deps.database, [0, 1, 2, 3].map((m) => new Date(now + m * 31 * 24 * 3600 * 1000)))
  // The feed publishes through whichever broker is registered below.
  let publish: Publish = () => {}
  const embedded = deps.externalBroker === undefined && deps.brokerCluster === undefined
  const subscribers = embedded ? new SubscriberIndex() : undefined
  const feed = new LiveFeed((topic, payload) => { publish(topic, payload) }, { publishPrivate: subscribers !== undefined, audience: subscribers ?? EVERYONE })
  const stats = newStats()
  app.decorate('mqttStats', stats)
  const countStored = ingestMetrics(app, stats, () => messages.ingest)
  const statusLog = app.log.child({ component: 'ingest-status' })
  const status = new IngestStatusLog(deps.database, {
    intervalMs: deps.statusIntervalMs ?? 5000,
    onError: (err) => { statusLog.warn({ err }, 'ingest status not written; kept for the next try') }
  })
  // Registered before the brokers, so it runs after theirs (onClose hooks run in reverse): their
  // drains note what they refuse, and this writes what is left.
  app.addHook('onClose', async () => { await status.flush() })
  const ingest: IngestContext = {
    database: deps.database,
    writer,
    now: clock,
    // The one setting of the time bounds, for every path: HTTP, MQTT (raw and JSON) and /add.
    limits: { maxValues: deps.maxValues, maxFutureMs: deps.maxFutureSeconds * 1000, minTime: OLDEST_READING },
    onStored: (stored) => { countStored(stored); feed.onStored(stored) },
    status
  }
  const messages = {
    database: deps.database,
    ingest: new MessageIngest(ingest),
    now: clock,
    stats,
    maxPayloadBytes: deps.maxPayloadBytes ?? 5 * 1024 * 1024,
    health: app.hasDecorator('databaseHealth') ? app.databaseHealth : undefined
  }
  app.decorate('mqttIngest', messages.ingest)
  const external = deps.externalBroker
  const cluster = deps.brokerCluster
  const throttle = app.hasDecorator('authThrottle') ? app.authThrottle : new AuthThrottle(new MemoryThrottleStore(() => clock().getTime()), DEFAULT_THROTTLE)
  const authenticator = app.hasDecorator('authenticator') ? app.authenticator : null
  // One count of failed device secrets per address for every path that checks one: MQTT
  // publishes, /add and the cluster's auth backend (the lock it keeps is this process's).
  const guesses = new DeviceTokenGuesses(throttle, () => clock().getTime())
  if (cluster !== undefined) {
    await app.register(clusterBrokerPlugin, { urls: cluster.urls, queue: cluster.queue, prefetch: cluster.prefetch, messages })
    publish = app.brokerCluster.publish
    // The cluster asks these who may connect, publish and subscribe (its HTTP auth backend), on
    // a listener of their own that only the broker reaches.
    await app.register(brokerAuthListener, {
      host: cluster.auth?.host ?? '127.0.0.1',
      port: cluster.auth?.port ?? 3001,
      secret: cluster.auth?.secret,
      database: deps.database,
      throttle,
      guesses,
      now: clock,
      log: app.log.child({ component: 'broker-auth' }),
      health: messages.health,
      deviceUser: cluster.deviceUser ?? 'device',
      internalUsers: new Set(cluster.urls.map((url) => decodeURIComponent(new URL(url).username)).filter((name) => name !== ''))
    })
  } else if (external === undefined) {
    await app.register(brokerPlugin, {
      listen: deps.mqtt,
      subscribers,
      access: {
        database: deps.database,
        authenticator,
        // The server's throttle, so HTTP and MQTT failures count together; a server without auth
        // (tests of the broker alone) still counts forwarding credentials.
        throttle,
        guesses,
        now: clock,
        messages: { ...messages, log: app.log.child({ component: 'mqtt' }) },
        feed
      }
    })
    publish = (topic, payload) => {
      app.broker.publish({ cmd: 'publish', topic, payload: Buffer.from(payload), qos: 0, retain: false, dup: false }, () => {})
    }
  } else {
    await app.register(externalBrokerPlugin, {
      url: external.url,
      clientId: external.clientId ?? `esp-ingest-${hostname()}`,
      group: external.group,
      connections: external.connections,
      messages
    })
    publish = app.mqttExternal.publish
  }
  const legacyPending = new Set<Promise<void>>()
  app.decorate('legacyAddSettled', async () => { while (legacyPending.size > 0) await Promise.allSettled([...legacyPending]) })
  const ctx: IngestRouteContext = { database: deps.database, clock, ingest, guesses, legacyPending }
  await app.register(async (v0) => {
    await v0.register(readingRoutes, ctx)
    await v0.register(legacyRoutes, ctx)
  }, { prefix: '/v0' })
}, { name: 'esp-ingest' })
