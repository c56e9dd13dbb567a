import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type Database, loadEngine, postgresRunner } from '@esp/db'
import { type Clock, ReadingsWriter, systemClock } from '@esp/domain'
import { brokerPlugin, type MqttListenOptions } from './broker/broker-plugin.js'
import type { IngestRouteContext } from './context.js'
import { legacyRoutes } from './routes/v0/legacy.js'
import { readingRoutes } from './routes/v0/readings.js'

export interface IngestDeps {
  database: Database
  /** where the embedded broker listens; tests leave it out and drive the broker in-process */
  mqtt?: MqttListenOptions | undefined
  maxValues: number
  maxFutureSeconds: number
  clock?: Clock
}

/** Readings older than this are refused: a mistyped year would otherwise be stored as history. */
export const OLDEST_READING = new Date('1990-01-01T00:00:00Z')

/**
 * Device-facing service: posted readings and the embedded MQTT broker (DESIGN.md). Not
 * encapsulated, so the launcher sees the broker and the port it took.
 */
export const ingestService = fp(async (app: FastifyInstance, deps: IngestDeps) => {
  const clock = deps.clock ?? systemClock
  const engine = await loadEngine(postgresRunner(deps.database.sql))
  // Partitions for the coming months exist before any device needs them (native engine).
  const now = clock().getTime()
  await engine.prepare(postgresRunner(deps.database.sql), [0, 1, 2, 3].map((m) => new Date(now + m * 31 * 24 * 3600 * 1000)))
  const ctx: IngestRouteContext = {
    database: deps.database,
    clock,
    ingest: {
      database: deps.database,
      writer: new ReadingsWriter(deps.database, engine),
      now: clock,
      limits: { maxValues: deps.maxValues, maxFutureMs: deps.maxFutureSeconds * 1000, minTime: OLDEST_READING }
    }
  }
  await app.register(brokerPlugin, { listen: deps.mqtt })
  await app.register(async (v0) => {
    await v0.register(readingRoutes, ctx)
    await v0.register(legacyRoutes, ctx)
  }, { prefix: '/v0' })
}, { name: 'esp-ingest' })
