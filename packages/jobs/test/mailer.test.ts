import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { createMailer } from '@esp/jobs'
import { startSmtp } from '@esp/test-helpers/smtp'

t.test('without SMTP, each message is one JSON file in the outbox', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-outbox-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const logged: Record<string, unknown>[] = []
  const mailer = createMailer({ from: 'Platform <p@example.org>', outboxDir: path.join(dir, 'outbox'), log: (fields) => { logged.push(fields) } })
  await mailer.send({ to: 'a@example.org', subject: 'Hello', text: 'secret link https://x/y?token=abc' })
  const files = readdirSync(path.join(dir, 'outbox'))
  t.equal(files.length, 1)
  t.match(JSON.parse(readFileSync(path.join(dir, 'outbox', files[0] ?? ''), 'utf8')), { to: 'a@example.org', subject: 'Hello', text: /secret link/ })
  t.notMatch(JSON.stringify(logged), /secret link/, 'bodies are not logged')
})

t.test('with SMTP_URL, messages go to a real SMTP server', async (t) => {
  const smtp = await startSmtp(t)
  const mailer = createMailer({ smtpUrl: smtp.url, from: 'Platform <p@example.org>', outboxDir: '/nonexistent' })
  t.teardown(() => { mailer.close() })
  await mailer.send({ to: 'b@example.org', subject: 'Reset', text: 'the body' })
  const received = await smtp.waitFor(1)
  t.equal(received.length, 1)
  t.match(received[0], { from: 'p@example.org', to: ['b@example.org'], subject: 'Reset', raw: /Subject: Reset[\s\S]*the body/ })
})
