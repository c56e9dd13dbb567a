import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Database } from '@esp/db'
import { createBoss, createMailer, ensureQueues, type MailPayload, type PgBoss, queues } from '@esp/jobs'
import { handleMail } from './jobs/mail.js'

export interface ExporterDeps {
  database: Database
  dataDir: string
  smtpUrl?: string | undefined
  mailFrom: string
  /** how often idle workers look for jobs */
  pollingIntervalSeconds?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    boss: PgBoss
  }
}

/** pg-boss workers on the platform's own database (DESIGN.md: exporter). */
export const exporterService = fp(async (app: FastifyInstance, deps: ExporterDeps) => {
  const log = app.log.child({ component: 'jobs' })
  const mailer = createMailer({
    smtpUrl: deps.smtpUrl,
    from: deps.mailFrom,
    outboxDir: path.join(path.resolve(deps.dataDir), 'outbox'),
    log: (fields, message) => { log.info(fields, message) }
  })
  const boss = createBoss({ url: deps.database.url, onError: (err) => { log.error({ err }, 'job queue error') } })
  await boss.start()
  await ensureQueues(boss)
  const polling = deps.pollingIntervalSeconds ?? 2
  await boss.work<MailPayload>(queues.mail.name, { batchSize: 5, pollingIntervalSeconds: polling }, async (jobs) => { await handleMail({ mailer }, jobs) })
  app.decorate('boss', boss)
  app.addHook('onClose', async () => {
    await boss.stop({ graceful: true, wait: true, timeout: 10_000 })
    mailer.close()
  })
}, { name: 'esp-exporter' })
