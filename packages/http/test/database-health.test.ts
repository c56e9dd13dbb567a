import t from 'tap'
import postgres from 'postgres'
import { createTestDatabase } from '@esp/db/testing'
import { freePort } from '@esp/db'
import { buildServer, DatabaseHealth } from '@esp/http'
import { until } from '@esp/test-helpers/mqtt'
import { testHttpOptions } from '@esp/test-helpers/server'

const error = (code: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(code), { code }, extra)

t.test('what marks the database unavailable, and the probe that sees it back', async (t) => {
  const database = await createTestDatabase(t)
  const changes: string[] = []
  const health = new DatabaseHealth(database, { probeIntervalMs: 20, onChange: (available) => { changes.push(available ? 'up' : 'down') } })
  t.teardown(() => { health.close() })

  t.equal(health.note(error('23505')), false, 'a constraint violation says nothing about availability')
  t.equal(health.note(new Error('plain')), false)
  t.ok(health.available)

  // A bare reset could be a client that hung up mid-request: a query decides, and here it answers.
  t.equal(health.note(error('ECONNRESET', { syscall: 'read' })), true)
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.ok(health.available, 'a reset the database did not cause leaves it available')
  t.same(changes, [])

  // The driver's own code can only be the database's: unavailable at once, until the probe answers.
  t.equal(health.note(error('CONNECTION_CLOSED')), true)
  t.notOk(health.available, 'unavailable at once')
  t.match(health.reason, /the database is unavailable: the connection to it was lost/)
  await until(() => health.available, 5000, 'the probe to find the database answering')
  t.same(changes, ['down', 'up'])
})

t.test('the gate: 503 with Retry-After and the reason while the database is away, never for liveness', async (t) => {
  // A pool on a port nobody listens on: every probe is refused.
  const sql = postgres(`postgres://postgres@127.0.0.1:${await freePort()}/none`, { max: 2, onnotice: () => {}, backoff: () => 0.01, connect_timeout: 2 })
  const health = new DatabaseHealth({ sql }, { probeIntervalMs: 20 })
  const app = await buildServer({ ...testHttpOptions, databaseHealth: health })
  app.get('/v0/work', async () => { await sql`select 1`; return { done: true } })
  // A route that answers from what it knows (the clustered broker's auth backend).
  app.get('/broker/known', { config: { ungated: true } }, async () => 'allow')
  await app.ready()
  t.teardown(async () => { await app.close(); await sql.end({ timeout: 0 }) })

  const first = await app.inject({ url: '/v0/work' })
  t.equal(first.statusCode, 503, 'the request that meets the refusal gets a 503, not a 500')
  t.equal(first.headers['retry-after'], '1')
  t.match(first.json(), { id: 'service_unavailable', message: /the database is unavailable: it refuses connections/ })
  t.notOk(health.available)

  const started = performance.now()
  const gated = await app.inject({ url: '/v0/work' })
  t.equal(gated.statusCode, 503)
  t.ok(performance.now() - started < 100, 'the next ones are answered at once')
  const ready = await app.inject({ url: '/health/ready' })
  t.equal(ready.statusCode, 503, '/health/ready says so')
  t.match(ready.json(), { message: /the database is unavailable/ })
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'liveness does not depend on the database')
  t.equal((await app.inject({ url: '/docs/json' })).statusCode, 200, 'nor does the API document')
  const ungated = await app.inject({ url: '/broker/known' })
  t.equal(ungated.statusCode, 200, 'nor a route marked ungated')
  t.equal(ungated.body, 'allow')
})
