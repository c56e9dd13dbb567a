import t from 'tap'
import postgres from 'postgres'
import { startPgCluster } from '@esp/test-helpers/pg-cluster'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'
import { startRedisServer } from '@esp/test-helpers/redis'
import { startSmtp } from '@esp/test-helpers/smtp'

/**
 * Redis and the mail server going away (issue 21): the platform stays up, requests keep being
 * answered (rate limits and failed-login counts fall back to each instance's own memory), a mail
 * that could not be sent waits in its job queue and goes out once the mail server is back.
 */

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const json = { 'content-type': 'application/json' }

t.test('Redis and SMTP stop and come back while the platform serves', async (t) => {
  const [cluster, redis, smtp] = await Promise.all([startPgCluster(t), startRedisServer(t), startSmtp(t)])
  const platform = startProcess(t, 'scripts/start.ts', {
    DATABASE_URL: cluster.url,
    DATA_DIR: tempDataDir(t),
    PORT: '0',
    MQTT_PORT: '0',
    REDIS_URL: redis.url,
    SMTP_URL: smtp.url,
    PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0'
  })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  let exitedEarly: number | null | undefined
  void platform.exited.then((code) => { exitedEarly = code })

  const signup = await fetch(`${base}/v0/users`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'mailee', email: 'mailee@example.org', password: 'a long password' }) })
  t.equal(signup.status, 201)
  const reset = async (): Promise<number> => (await fetch(`${base}/v0/password_resets`, { method: 'POST', headers: json, body: JSON.stringify({ email_or_username: 'mailee' }) })).status
  t.equal(await reset(), 200, 'a reset is asked for')
  await smtp.waitFor(1)
  t.pass('its mail arrives while the mail server is up')

  // A round of what a client does: anonymous reads (rate limited), a login, a wrong password
  // (counted by the throttle), the user's own profile.
  const round = async (): Promise<Array<{ status: number, ms: number }>> => {
    const timed = async (url: string, init?: RequestInit): Promise<{ status: number, ms: number }> => {
      const started = performance.now()
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) })
      await res.arrayBuffer()
      return { status: res.status, ms: performance.now() - started }
    }
    const login = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'mailee', password: 'a long password' }) })
    const token = login.ok ? ((await login.json()) as { access_token: string }).access_token : ''
    return await Promise.all([
      timed(`${base}/v0/devices?per_page=5`),
      timed(`${base}/v0/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'mailee', password: 'not the password' }) }),
      timed(`${base}/v0/me`, { headers: { authorization: `Bearer ${token}` } }),
      { status: login.status, ms: 0 }
    ])
  }
  const expected = [200, 422, 200, 200]
  t.same((await round()).map((a) => a.status), expected, 'with Redis up')

  await redis.stop()
  const during: Array<{ status: number, ms: number }> = []
  for (let i = 0; i < 5; i++) {
    const answers = await round()
    during.push(...answers)
    t.same(answers.map((a) => a.status), expected, `Redis down, round ${i + 1}: answered as before`)
    await sleep(200)
  }
  const slowest = Math.max(...during.map((a) => a.ms))
  t.comment(`slowest answer while Redis was down: ${slowest.toFixed(1)} ms`)
  t.ok(slowest < 1500, 'nothing waits on Redis for long')

  await smtp.stop()
  t.equal(await reset(), 200, 'a reset asked for while the mail server is down is still accepted')
  const sql = postgres(cluster.url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end() })
  // The job that writes the mail fails and waits for its retry (30 s, pg-boss's retryDelay).
  let state = ''
  for (let i = 0; i < 100 && state !== 'retry'; i++) {
    const [job] = await sql<{ state: string }[]>`select state from pgboss.job where name = 'mail' order by created_on desc limit 1`
    state = job?.state ?? ''
    if (state !== 'retry') await sleep(100)
  }
  t.equal(state, 'retry', 'the mail job failed against the absent server and waits to be retried')

  await redis.start()
  t.same((await round()).map((a) => a.status), expected, 'Redis back: answered as before')
  await smtp.start()
  const deadline = Date.now() + 90_000
  while (smtp.received.length < 2 && Date.now() < deadline) await sleep(250)
  t.equal(smtp.received.length, 2, 'the mail goes out once the mail server is back')

  t.equal(exitedEarly, undefined, 'the platform stayed up throughout')
  platform.child.kill('SIGTERM')
  t.equal(await platform.exited, 0, 'and stops cleanly')
})
