import type { FastifyInstance } from 'fastify'
import type { Database } from '@esp/db'
import { rootRoutes } from './routes/v0/root.js'

export interface ApiDeps {
  database: Database
}

/** Everything people and apps call, except posting readings (DESIGN.md). Routes live under /v0. */
export async function apiService (app: FastifyInstance, deps: ApiDeps): Promise<void> {
  void deps
  await app.register(rootRoutes, { prefix: '/v0' })
}
