import type { FastifyInstance } from 'fastify'
import { ingestService } from '@esp/ingest'
import type { Database } from '@esp/db'
import { makeDevice as madeDevice } from '@esp/db/testing'
import type { Clock } from '@esp/domain'
import type { AuthOptions } from '@esp/http'
import { buildApi, type ApiHarness } from './api.js'

interface Tap { teardown: (fn: () => unknown) => void }

/** api and ingest on one server, as `pnpm start` runs them, on a database of the test file's own. */
/**
 * With `mqtt`, the embedded broker listens on a free port (app.mqttListening) and the HTTP server on
 * another (for MQTT over WebSocket at /mqtt): the tests talk to both as devices and browsers do.
 */
export async function buildPlatform (t: Tap, options: { clock?: Clock, maxValues?: number, maxBuckets?: number, bodyLimit?: number, mqtt?: boolean, auth?: Partial<AuthOptions> } = {}): Promise<ApiHarness> {
  return await buildApi(t, {
    ...(options.auth !== undefined ? { auth: options.auth } : {}),
    deps: { ...(options.clock !== undefined ? { clock: options.clock } : {}), ...(options.maxBuckets !== undefined ? { maxBuckets: options.maxBuckets } : {}) },
    ...(options.bodyLimit !== undefined ? { server: { bodyLimit: options.bodyLimit } } : {}),
    extra: async (app: FastifyInstance, database: Database) => {
      await app.register(ingestService, {
        database,
        maxValues: options.maxValues ?? 100_000,
        maxFutureSeconds: 86_400,
        ...(options.mqtt === true ? { mqtt: { host: '127.0.0.1', port: 0, explicit: true } } : {}),
        ...(options.clock !== undefined ? { clock: options.clock } : {})
      })
    }
  })
}

/**
 * A device row as POST /devices would make it, with no token: its id. The factory behind it
 * (makeDevice of @esp/db/testing) returns the whole device and makes a token; prefer it.
 */
export async function makeDevice (database: Database, ownerId: number, fields: { isPrivate?: boolean, kitId?: number | null, mac?: string | null, name?: string } = {}): Promise<number> {
  return (await madeDevice(database, { ownerId, token: null, ...fields })).id
}
