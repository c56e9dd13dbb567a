import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database } from '@esp/db'
import { brokerPlugin, type MqttListenOptions } from './broker/broker-plugin.js'

export interface IngestDeps {
  database: Database
  /** where the embedded broker listens; tests leave it out and drive the broker in-process */
  mqtt?: MqttListenOptions | undefined
}

/**
 * Device-facing service: posted readings and the embedded MQTT broker (DESIGN.md). Not
 * encapsulated, so the launcher sees the broker and the port it took.
 */
export const ingestService = fp(async (app: FastifyInstance, deps: IngestDeps) => {
  await app.register(brokerPlugin, { listen: deps.mqtt })
}, { name: 'esp-ingest' })
