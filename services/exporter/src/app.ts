import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type Database, migratedEngine, ReadingsWriter } from '@esp/db'
import { archiveDir, type Clock, deliverPasswordReset, type JobSender, systemClock } from '@esp/domain'
import { createBoss, createMailer, type CsvArchivePayload, type CsvImportPayload, ensureQueues, type MailPayload, type PasswordResetPayload, type PgBoss, queues, sendJob } from '@esp/jobs'
import { handleCsvArchive } from './jobs/csv-archive.js'
import { handleCsvImport } from './jobs/csv-import.js'
import { handleMail } from './jobs/mail.js'
import { notifyLowBattery, notifyStoppedPublishing, purgeArchivedDevices, type ScheduledDeps } from './jobs/scheduled.js'
import { jobMetrics } from './metrics.js'

export interface ExporterDeps {
  database: Database
  dataDir: string
  smtpUrl?: string | undefined
  mailFrom: string
  /** how often idle workers look for jobs */
  pollingIntervalSeconds?: number
  /** signs CSV archive links; the api verifies them with the same key */
  archiveLinkSecret?: string
  archiveLinkTtlSeconds?: number | undefined
  purgeGraceSeconds?: number | undefined
  stoppedPublishingAfterSeconds?: number | undefined
  lowBatteryPercent?: number | undefined
  /** false: no cron schedules (tests run the scheduled jobs as functions) */
  schedules?: boolean
  clock?: Clock
}

declare module 'fastify' {
  interface FastifyInstance {
    boss: PgBoss
  }
}

/** When the scheduled jobs run (UTC cron); each is idempotent, so an extra or missed tick is harmless. */
export const SCHEDULES = {
  purgeArchivedDevices: '17 * * * *',
  notifyStoppedPublishing: '*/15 * * * *',
  notifyLowBattery: '7 * * * *'
} as const

/** pg-boss workers on the platform's own database (DESIGN.md: exporter). */
export const exporterService = fp(async (app: FastifyInstance, deps: ExporterDeps) => {
  const log = app.log.child({ component: 'jobs' })
  const clock = deps.clock ?? systemClock
  const mailer = createMailer({
    smtpUrl: deps.smtpUrl,
    from: deps.mailFrom,
    outboxDir: path.join(path.resolve(deps.dataDir), 'outbox'),
    log: (fields, message) => { log.info(fields, message) }
  })
  const boss = createBoss({ url: deps.database.url, onError: (err) => { log.error({ err }, 'job queue error') } })
  await boss.start()
  await ensureQueues(boss, deps.database)
  const send: JobSender = async (tx, key, payload) => { await sendJob(boss, tx, key, payload) }
  const engine = await migratedEngine(deps.database)
  const archives = archiveDir(deps.dataDir)
  const scheduled: ScheduledDeps = {
    database: deps.database,
    engine,
    send,
    archiveDir: archives,
    settings: {
      purgeGraceSeconds: deps.purgeGraceSeconds ?? 86_400,
      stoppedAfterSeconds: deps.stoppedPublishingAfterSeconds ?? 3600,
      lowBatteryPercent: deps.lowBatteryPercent ?? 15
    }
  }
  const polling = deps.pollingIntervalSeconds ?? 2
  await boss.work<MailPayload>(queues.mail.name, { batchSize: 5, pollingIntervalSeconds: polling }, async (jobs) => { await handleMail({ mailer }, jobs) })
  await boss.work<PasswordResetPayload>(queues.passwordReset.name, { batchSize: 5, pollingIntervalSeconds: polling }, async (jobs) => {
    for (const job of jobs) await deliverPasswordReset(deps.database, send, job.data)
  })
  await boss.work<CsvArchivePayload>(queues.csvArchive.name, { pollingIntervalSeconds: polling }, async ([job]) => {
    if (job === undefined) return
    if (deps.archiveLinkSecret === undefined) throw new Error('CSV archives need archiveLinkSecret to sign their links')
    await handleCsvArchive({
      database: deps.database,
      send,
      archiveDir: archives,
      linkSecret: deps.archiveLinkSecret,
      linkTtlSeconds: deps.archiveLinkTtlSeconds ?? 86_400,
      now: clock
    }, job.data)
  })
  // Imports go through the same group-committing writer as posted readings.
  const writer = new ReadingsWriter(deps.database, engine)
  await boss.work<CsvImportPayload>(queues.csvImport.name, { pollingIntervalSeconds: polling }, async ([job]) => {
    if (job === undefined) return
    await handleCsvImport({ database: deps.database, writer, now: clock }, job.data)
  })
  const tasks = {
    purgeArchivedDevices: async () => { const ids = await purgeArchivedDevices(scheduled, clock()); if (ids.length > 0) log.info({ devices: ids }, 'archived devices purged') },
    notifyStoppedPublishing: async () => { await notifyStoppedPublishing(scheduled, clock()) },
    notifyLowBattery: async () => { await notifyLowBattery(scheduled, clock()) }
  }
  for (const [key, run] of Object.entries(tasks) as [keyof typeof SCHEDULES, () => Promise<void>][]) {
    await boss.work(queues[key].name, { pollingIntervalSeconds: polling }, run)
    // pg-boss keeps one schedule per name in the database and sends one job per tick whatever the
    // number of exporters; registering it again at every start only updates it.
    if (deps.schedules !== false) await boss.schedule(queues[key].name, SCHEDULES[key], {}, { tz: 'UTC' })
  }
  app.decorate('boss', boss)
  jobMetrics(app, deps.database)
  app.addHook('onClose', async () => {
    await boss.stop({ graceful: true, wait: true, timeout: 10_000 })
    mailer.close()
  })
}, { name: 'esp-exporter' })
