import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { createTestDatabase } from '@esp/db/testing'
import { buildServer, type PressureOptions } from '@esp/http'
import { sample } from '@esp/test-helpers/metrics'
import { until } from '@esp/test-helpers/mqtt'
import { testHttpOptions } from '@esp/test-helpers/server'

interface Tap { teardown: (fn: () => unknown) => void }

async function server (t: Tap, pressure: Omit<PressureOptions, 'retryAfterSeconds'>): Promise<FastifyInstance> {
  const app = await buildServer({ ...testHttpOptions, pressure: { retryAfterSeconds: 7, sampleIntervalMs: 25, ...pressure } })
  app.get('/v0/work', async () => ({ done: true }))
  await app.ready()
  t.teardown(async () => { await app.close() })
  return app
}

t.test('a saturated database pool turns requests away with 503 and Retry-After, and lets them in again', async (t) => {
  // One connection, held by a reservation: the probe query waits past its limit.
  const database = await createTestDatabase(t, { max: 1 })
  const app = await server(t, { maxEventLoopDelayMs: 0, maxDbWaitMs: 100, database })
  // A probe's first query opens the pool's connection, which on a machine busy with other test
  // files can take longer than the 100 ms limit: healthy once a probe has come back in time.
  await until(async () => (await app.inject({ url: '/v0/work' })).statusCode === 200, 10_000, 'the first probe to come back in time')
  t.equal((await app.inject({ url: '/v0/work' })).statusCode, 200, 'healthy at first')

  const held = await database.sql.reserve()
  try {
    await until(async () => (await app.inject({ url: '/v0/work' })).statusCode === 503, 10_000, 'the pool to count as saturated')
    const busy = await app.inject({ url: '/v0/work' })
    t.equal(busy.statusCode, 503)
    t.equal(busy.headers['retry-after'], '7')
    t.match(busy.json(), { id: 'service_unavailable', message: /database pool is saturated/, errors: null, url: null })
    t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'liveness still answers: the process is fine, only busy')
    const metrics = await app.inject({ url: '/metrics' })
    t.equal(metrics.statusCode, 200, 'metrics still answer: they show the pressure')
    t.ok((sample(metrics.body, 'esp_pressure_rejections_total', { reason: 'healthCheck' }) ?? 0) >= 1)
    t.ok((sample(metrics.body, 'esp_db_pool_probe_seconds') ?? 0) >= 0.1, 'the probe waited at least the limit')
  } finally {
    held.release()
  }
  await until(async () => (await app.inject({ url: '/v0/work' })).statusCode === 200, 10_000, 'requests to be let in again')
  t.pass('the pool is free again')
})

t.test('a saturated event loop turns requests away with 503 and Retry-After', async (t) => {
  const app = await server(t, { maxEventLoopDelayMs: 20, maxDbWaitMs: 0 })
  // The other test files share the machine's cores, so the loop may be slow for a moment at first.
  await until(async () => (await app.inject({ url: '/v0/work' })).statusCode === 200, 10_000, 'the event loop to be calm at first')
  // Blocks the loop for 60 ms out of every 65 until the test ends.
  let blocking = true
  const block = (): void => {
    if (!blocking) return
    const until = performance.now() + 60
    while (performance.now() < until) { /* busy */ }
    setTimeout(block, 5)
  }
  block()
  try {
    await until(async () => (await app.inject({ url: '/v0/work' })).statusCode === 503, 10_000, 'the event loop to count as saturated')
    const busy = await app.inject({ url: '/v0/work' })
    t.equal(busy.statusCode, 503)
    t.equal(busy.headers['retry-after'], '7')
    t.match(busy.json(), { id: 'service_unavailable', message: /event loop is saturated/ })
  } finally {
    blocking = false
  }
})

t.test('without pressure settings nothing is turned away', async (t) => {
  const app = await buildServer({ ...testHttpOptions })
  await app.ready()
  t.teardown(async () => { await app.close() })
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200)
})
