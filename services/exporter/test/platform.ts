import type { Test } from 'tap'
import { exporterService, type ExporterDeps } from '@esp/exporter'
import { ingestService } from '@esp/ingest'
import { buildApi } from '@esp/test-helpers/api'
import { startSmtp } from '@esp/test-helpers/smtp'

/**
 * api, ingest and a real exporter (pg-boss workers, a real SMTP server) on one server, on a clock
 * the test moves: the 6-hour rule, link expiry and the scheduled jobs are all about time. Schedules
 * are off; tests call the scheduled jobs as pg-boss would.
 */
export async function exporterPlatform (t: Test, options: { linkSecret?: string, exporter?: Partial<ExporterDeps> } = {}) {
  let now = new Date(Math.floor(Date.now() / 1000) * 1000)
  const clock = (): Date => now
  const smtp = await startSmtp(t)
  const harness = await buildApi(t, {
    deps: { clock, ...(options.linkSecret !== undefined ? { archiveLinkSecret: options.linkSecret } : {}) },
    extra: async (app, database, dataDir) => {
      await app.register(ingestService, { database, maxValues: 100_000, maxFutureSeconds: 86_400, clock })
      await app.register(exporterService, {
        database,
        dataDir,
        smtpUrl: smtp.url,
        mailFrom: 'Test <test@example.org>',
        pollingIntervalSeconds: 0.5,
        schedules: false,
        clock,
        ...(options.linkSecret !== undefined ? { archiveLinkSecret: options.linkSecret } : {}),
        ...options.exporter
      })
    }
  })
  return { ...harness, smtp, clock, advance: (ms: number) => { now = new Date(now.getTime() + ms) } }
}
