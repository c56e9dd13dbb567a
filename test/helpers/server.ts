import type { FastifyInstance } from 'fastify'
import { createTestDatabase } from '@esp/db/testing'
import type { Database } from '@esp/db'
import { buildServer, type ServerOptions } from '@esp/http'

interface Tap { teardown: (fn: () => unknown) => void }

export const testHttpOptions: ServerOptions = {
  title: 'test',
  // ESP_TEST_LOG=error shows server-side failures while debugging a test.
  logLevel: process.env.ESP_TEST_LOG ?? 'silent',
  bodyLimit: 1024 * 1024,
  trustProxy: false,
  publicUrl: undefined,
  vendor: 'smartcitizen',
  versionGit: 'test-version',
  ready: async () => null
}

/** The shared server with the services a test registers, on a database of the test file's own. */
export async function buildTestServer (
  t: Tap,
  register: (app: FastifyInstance, database: Database) => Promise<void>,
  overrides: Partial<ServerOptions> | ((database: Database) => Partial<ServerOptions>) = {},
  /** a database of the test's own (e.g. on a server it started) instead of a clone of the template */
  own?: Database
): Promise<{ app: FastifyInstance, database: Database }> {
  const database = own ?? await createTestDatabase(t)
  const app = await buildServer({ ...testHttpOptions, ...(typeof overrides === 'function' ? overrides(database) : overrides) })
  await register(app, database)
  await app.ready()
  t.teardown(async () => { await app.close() })
  return { app, database }
}
