import t from 'tap'
import { requestPasswordReset, type JobSender } from '@esp/domain'
import { exporterService } from '@esp/exporter'
import { bearer, buildApi, outbox, signUp } from '@esp/test-helpers/api'

async function withMail (t: Parameters<typeof buildApi>[0]) {
  return await buildApi(t, {
    extra: async (app, database, dataDir) => {
      await app.register(exporterService, { database, dataDir, mailFrom: 'Test <test@example.org>', pollingIntervalSeconds: 0.5 })
    }
  })
}

async function waitForMail (dataDir: string, count: number): Promise<{ to: string, subject: string, text: string }[]> {
  for (let i = 0; i < 100; i++) {
    const messages = await outbox(dataDir)
    if (messages.length >= count) return messages
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`expected ${count} messages in the outbox`)
}

t.test('a forgotten password is reset from the e-mail in the outbox', async (t) => {
  const { app, dataDir } = await withMail(t)
  const user = await signUp(app)
  const asked = await app.inject({ method: 'POST', url: '/v0/password_resets', payload: { email_or_username: user.email.toUpperCase() } })
  t.equal(asked.statusCode, 200)
  t.same(asked.json(), { message: 'Password Reset Instructions Delivered' })
  const [mail] = await waitForMail(dataDir, 1)
  t.match(mail, { to: user.email, subject: 'Password Reset Instructions' })
  const token = /password_resets\/([\w-]+)/.exec(mail?.text ?? '')?.[1] ?? ''
  t.ok(token.length >= 40, 'the mail carries the reset code')

  for (const method of ['GET', 'POST'] as const) {
    const show = await app.inject({ method, url: `/v0/password_resets/${token}` })
    t.equal(show.statusCode, 200)
    t.match(show.json(), { id: user.id, username: user.username, email: '[FILTERED]' })
  }
  const short = await app.inject({ method: 'PATCH', url: `/v0/password_resets/${token}`, payload: { password: 'short' } })
  t.equal(short.statusCode, 422)
  t.match(short.json().errors.password[0], /too short/)
  const missing = await app.inject({ method: 'PATCH', url: `/v0/password_resets/${token}` })
  t.equal(missing.statusCode, 400)
  const done = await app.inject({ method: 'PATCH', url: `/v0/password_resets/${token}?password=${encodeURIComponent('my new long password')}` })
  t.equal(done.statusCode, 200)
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode, 401, 'old tokens are revoked')
  t.equal((await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: 'my new long password' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/password_resets/${token}`, payload: { password: 'yet another password' } })).statusCode, 404, 'single use')
  t.equal((await app.inject({ url: `/v0/password_resets/${token}` })).statusCode, 404)
})

t.test('the answer never reveals whether an account exists; unknown accounts get no mail', async (t) => {
  const { app, dataDir } = await withMail(t)
  const user = await signUp(app)
  const unknown = await app.inject({ method: 'POST', url: '/v0/password_resets?email_or_username=nobody@example.org' })
  const known = await app.inject({ method: 'POST', url: '/v0/password_resets', payload: { username: user.username } })
  t.equal(unknown.statusCode, known.statusCode)
  t.same(unknown.json(), known.json())
  const messages = await waitForMail(dataDir, 1)
  t.equal(messages.length, 1)
  t.equal(messages[0]?.to, user.email)
  const none = await app.inject({ method: 'POST', url: '/v0/password_resets', payload: {} })
  t.equal(none.statusCode, 400)
  t.match(none.json(), { id: 'parameter_missing' })
})

t.test('reset codes expire and are stored hashed', async (t) => {
  const { app, database, dataDir } = await withMail(t)
  const user = await signUp(app)
  await app.inject({ method: 'POST', url: '/v0/password_resets', payload: { email: user.email } })
  const [mail] = await waitForMail(dataDir, 1)
  const token = /password_resets\/([\w-]+)/.exec(mail?.text ?? '')?.[1] ?? ''
  const [row] = await database.sql`select token_hash from password_resets where user_id = ${user.id}`
  t.match(row?.token_hash, /^[0-9a-f]{64}$/)
  t.not(row?.token_hash, token)
  await database.sql`update password_resets set expires_at = now() - interval '1 minute' where user_id = ${user.id}`
  t.equal((await app.inject({ url: `/v0/password_resets/${token}` })).statusCode, 404)
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/password_resets/${token}`, payload: { password: 'long enough password' } })).statusCode, 404)
})

t.test('a reset request does the same work whatever the account: one job, no lookup', async (t) => {
  const sent: Array<{ key: string, payload: Record<string, unknown> }> = []
  const send: JobSender = async (_tx, key, payload) => { sent.push({ key, payload: { ...payload } }) }
  // The request path must not query anything itself: the account is looked up in the job.
  const noQueries = { unsafe: () => { throw new Error('the request queried the database') } }
  const now = new Date('2026-11-25T12:00:00Z')
  for (const identifier of ['existing-user', 'nobody@example.org']) {
    await requestPasswordReset(noQueries as never, send, { identifier: ` ${identifier} `, baseUrl: 'http://localhost', ttlSeconds: 3600, now })
  }
  t.same(sent, [
    { key: 'passwordReset', payload: { identifier: 'existing-user', baseUrl: 'http://localhost', ttlSeconds: 3600, requestedAt: now.getTime() } },
    { key: 'passwordReset', payload: { identifier: 'nobody@example.org', baseUrl: 'http://localhost', ttlSeconds: 3600, requestedAt: now.getTime() } }
  ], 'the same job, differing only in the identifier')
})

t.test('through the route: both answers identical, one password-reset job each, nothing else written', async (t) => {
  // No exporter: what the request itself leaves behind is what remains.
  const { app, database } = await buildApi(t)
  const user = await signUp(app)
  const state = async () => (await database.sql`
    select (select count(*) from password_resets)::int as resets, (select max(updated_at) from users) as users_touched,
           (select count(*) from pgboss.job where name = 'mail')::int as mails`)[0]
  const before = await state()
  const known = await app.inject({ method: 'POST', url: '/v0/password_resets', payload: { email_or_username: user.email } })
  const unknown = await app.inject({ method: 'POST', url: '/v0/password_resets', payload: { email_or_username: 'nobody@example.org' } })
  t.equal(known.statusCode, 200)
  t.equal(unknown.statusCode, known.statusCode)
  t.equal(unknown.body, known.body, 'the same bytes')
  const jobs = await database.sql<Array<{ data: Record<string, unknown> }>>`select data from pgboss.job where name = 'password-reset' order by created_on`
  t.same(jobs.map((j) => Object.keys(j.data).sort()), [['baseUrl', 'identifier', 'requestedAt', 'ttlSeconds'], ['baseUrl', 'identifier', 'requestedAt', 'ttlSeconds']])
  t.same(jobs.map((j) => j.data.identifier), [user.email, 'nobody@example.org'])
  t.same(await state(), before, 'no reset row and no mail job from the request itself')
})
