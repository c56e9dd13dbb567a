import t from 'tap'
import { exporterService } from '@esp/exporter'
import { queues } from '@esp/jobs'
import { sample } from '@esp/test-helpers/metrics'
import { tempDataDir } from '@esp/test-helpers/process'
import { buildTestServer } from '@esp/test-helpers/server'

t.test('the exporter reports queue depth and failures by queue on GET /metrics', async (t) => {
  const dataDir = tempDataDir(t)
  const { app } = await buildTestServer(t, async (app, database) => {
    // Idle workers look again only after a minute: the jobs sent below stay waiting.
    await app.register(exporterService, { database, dataDir, smtpUrl: undefined, mailFrom: 'Test <test@example.org>', pollingIntervalSeconds: 60, schedules: false })
  })
  const mail = { to: 'someone@example.org', subject: 'hello', text: 'hello' }
  const scrape = async (): Promise<string> => (await app.inject({ url: '/metrics' })).body

  // A queue created at start but still empty reports zeros, so an alert on it has a series to read.
  t.equal(sample(await scrape(), 'esp_jobs', { queue: queues.mail.name, state: 'created' }), 0)
  const ids = await Promise.all([1, 2, 3].map(async () => await app.boss.send(queues.mail.name, mail, { retryLimit: 0 })))
  const failed = ids[0]
  if (failed === null || failed === undefined) throw new Error('no job id')
  await app.boss.fail(queues.mail.name, failed, { message: 'made to fail by the test' })

  const text = await scrape()
  t.equal(sample(text, 'esp_jobs', { queue: queues.mail.name, state: 'created' }), 2, 'waiting jobs')
  t.equal(sample(text, 'esp_jobs', { queue: queues.mail.name, state: 'failed' }), 1, 'failed jobs')
  t.equal(sample(text, 'esp_jobs', { queue: queues.mail.name, state: 'active' }), 0)
  t.equal(sample(text, 'esp_jobs', { queue: queues.csvArchive.name, state: 'created' }), 0, 'every queue is listed')
  t.equal(await app.boss.getQueueSize(queues.mail.name), 2, 'the same depth pg-boss itself reports')
})
