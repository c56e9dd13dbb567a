import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database } from '@esp/db'
import { createBoss, type PgBoss } from '@esp/jobs'

export interface ExporterDeps {
  database: Database
}

declare module 'fastify' {
  interface FastifyInstance {
    boss: PgBoss
  }
}

/** pg-boss workers on the platform's own database (DESIGN.md: exporter). */
export const exporterService = fp(async (app: FastifyInstance, deps: ExporterDeps) => {
  const boss = createBoss({ url: deps.database.url, onError: (err) => { app.log.error({ err, component: 'jobs' }, 'job queue error') } })
  await boss.start()
  app.decorate('boss', boss)
  app.addHook('onClose', async () => { await boss.stop({ graceful: true, timeout: 10_000 }) })
}, { name: 'esp-exporter' })
