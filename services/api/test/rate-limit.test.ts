import t from 'tap'
import { ingestService } from '@esp/ingest'
import { systemClock } from '@esp/domain'
import { bearer, buildApi, signUp, signUpAs, TEST_JWT_SECRET } from '@esp/test-helpers/api'
import { startRedis } from '@esp/test-helpers/redis'
import { makeDevice } from '@esp/test-helpers/platform'

t.test('a citizen is throttled at the 91st request in a minute, with the error body and headers', async (t) => {
  const limited = await buildApi(t, { server: { rateLimit: { perMinute: 90 } } })
  const citizen = await signUp(limited.app)
  const researcher = await signUpAs(limited, 'researcher')
  const admin = await signUpAs(limited, 'admin')
  // signUp spent two anonymous requests from this IP; the citizen's budget is its own.
  for (let i = 1; i <= 90; i++) {
    const res = await limited.app.inject({ url: '/v0/me', headers: bearer(citizen.token) })
    if (res.statusCode !== 200) { t.fail(`request ${i} got ${res.statusCode}`); break }
  }
  const over = await limited.app.inject({ url: '/v0/me', headers: bearer(citizen.token) })
  t.equal(over.statusCode, 429)
  t.match(over.json(), { id: 'too_many_requests', message: String, errors: null, url: null })
  t.match(over.headers['retry-after'], /^\d+$/)
  t.equal(over.headers['x-ratelimit-limit'], '90')
  t.equal(over.headers['x-ratelimit-remaining'], '0')
  for (const privileged of [researcher, admin]) {
    let ok = 0
    for (let i = 0; i < 120; i++) if ((await limited.app.inject({ url: '/v0/me', headers: bearer(privileged.token) })).statusCode === 200) ok++
    t.equal(ok, 120, 'researchers and admins are not throttled')
  }
  t.equal((await limited.app.inject({ url: '/health/ready' })).statusCode, 200, 'health probes are not throttled')
})

t.test('anonymous callers are counted by IP', async (t) => {
  const { app } = await buildApi(t, { server: { rateLimit: { perMinute: 5 } } })
  const from = (ip: string) => ({ url: '/v0/', remoteAddress: ip })
  for (let i = 0; i < 5; i++) t.equal((await app.inject(from('10.0.0.1'))).statusCode, 200)
  t.equal((await app.inject(from('10.0.0.1'))).statusCode, 429)
  t.equal((await app.inject(from('10.0.0.2'))).statusCode, 200, 'another IP has its own budget')
})

t.test('with REDIS_URL two instances share one budget', async (t) => {
  const redisUrl = await startRedis(t)
  const first = await buildApi(t, { server: { rateLimit: { perMinute: 6, redisUrl } } })
  // The second instance shares the first one's database and secret, as replicas do.
  const second = await buildApi(t, { server: { rateLimit: { perMinute: 6, redisUrl }, auth: { database: first.database, jwtSecret: TEST_JWT_SECRET, clock: systemClock } } })
  const user = await signUp(first.app)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    statuses.push((await first.app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode)
    statuses.push((await second.app.inject({ url: '/v0/', headers: bearer(user.token) })).statusCode)
  }
  t.same(statuses, [200, 200, 200, 200, 200, 200, 429, 429])
})

t.test('the limit is weighted: a request that answers many values costs more of it', async (t) => {
  const { app, database } = await buildApi(t, {
    server: { rateLimit: { perMinute: 90 } },
    extra: async (app, database) => { await app.register(ingestService, { database, maxValues: 100_000, maxFutureSeconds: 86_400 }) }
  })
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { name: 'a year of hours' })
  const hour = 3_600_000
  const end = Math.floor(Date.now() / hour) * hour
  for (let day = 0; day < 365; day += 60) {
    const data = Array.from({ length: Math.min(60, 365 - day) * 24 }, (_, i) => ({ recorded_at: new Date(end - (365 - day) * 24 * hour + i * hour).toISOString(), sensors: [{ id: 55, value: i % 30 }] }))
    t.equal((await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })).statusCode, 200)
  }
  const from = (url: string) => ({ url, remoteAddress: '10.0.0.9' })
  const remaining = async (): Promise<number> => Number((await app.inject(from('/v0/'))).headers['x-ratelimit-remaining'])
  const before = await remaining()
  const year = await app.inject(from(`/v0/devices/${device}/readings?sensor_id=55&rollup=1h&from=2000-01-01&to=2200-01-01&timezone=Asia/Kathmandu`))
  t.equal(year.statusCode, 200)
  const values = (year.json() as { readings: unknown[] }).readings.length
  t.ok(values >= 365 * 24 - 1, `a year of hours answered (${values} values)`)
  const after = await remaining()
  // The cheap request, the year (its unit and one per 2,000 values), then this one.
  t.equal(before - after, 1 + 1 + Math.floor(values / 2_000), `the year cost ${before - after - 1} units`)
  // Over what is left, the same request is refused before anything is read.
  let status = 200
  for (let i = 0; i < 30 && status === 200; i++) status = (await app.inject(from(`/v0/devices/${device}/readings?sensor_id=55&rollup=1h&from=2000-01-01&to=2200-01-01`))).statusCode
  t.equal(status, 429, 'expensive requests run out the budget sooner')
  t.equal((await app.inject(from('/v0/'))).statusCode, 429, 'and the caller is then refused anything')
  t.equal((await app.inject({ url: '/v0/', remoteAddress: '10.0.0.10' })).statusCode, 200, 'another address is not')
})

t.test('a 503 answered before the limit was counted still costs its caller', async (t) => {
  const { app } = await buildApi(t, {
    server: { rateLimit: { perMinute: 5 } },
    extra: async (app) => {
      // Turned away before the rate limit runs, as backpressure and the database gate do.
      app.get('/v0/always-unavailable', { onRequest: async (_request, reply) => { await reply.code(503).send({ id: 'service_unavailable', message: 'busy', errors: null, url: null }) } }, async () => ({}))
    }
  })
  const from = (url: string) => ({ url, remoteAddress: '10.0.0.11' })
  for (let i = 0; i < 5; i++) t.equal((await app.inject(from('/v0/always-unavailable'))).statusCode, 503)
  t.equal((await app.inject(from('/v0/'))).statusCode, 429, 'five 503s spent the budget of five')
})

t.test('a page of many items, a search and an export cost more than a page of 25', async (t) => {
  const { app } = await buildApi(t, { server: { rateLimit: { perMinute: 90 } } })
  let address = 20
  // Units a request took: remaining before and after, less the request that reads it.
  const costOf = async (url: string): Promise<number> => {
    const from = { remoteAddress: `10.0.1.${address++}` }
    const before = Number((await app.inject({ ...from, url: '/v0/' })).headers['x-ratelimit-remaining'])
    const res = await app.inject({ ...from, url })
    t.ok(res.statusCode < 500, `${url}: ${res.statusCode}`)
    const after = Number((await app.inject({ ...from, url: '/v0/' })).headers['x-ratelimit-remaining'])
    return before - after - 1
  }
  t.equal(await costOf('/v0/sensors'), 1, 'the default page: one unit')
  t.equal(await costOf('/v0/sensors?per_page=1000'), 11, 'a page of 1,000: ten more')
  t.equal(await costOf('/v0/search?q=air'), 3, 'a search: two more')
  t.equal(await costOf('/v0/readings/export?device_ids=1'), 11, 'an export: ten more')
})
