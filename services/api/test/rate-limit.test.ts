import t from 'tap'
import { systemClock } from '@esp/domain'
import { bearer, buildApi, signUp, signUpAs, TEST_JWT_SECRET } from '../../../test/helpers/api.js'
import { startRedis } from '../../../test/helpers/redis.js'

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
  const second = await buildApi(t, { server: { rateLimit: { perMinute: 6, redisUrl }, auth: { db: first.database.db, jwtSecret: TEST_JWT_SECRET, clock: systemClock } } })
  const user = await signUp(first.app)
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    statuses.push((await first.app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode)
    statuses.push((await second.app.inject({ url: '/v0/', headers: bearer(user.token) })).statusCode)
  }
  t.same(statuses, [200, 200, 200, 200, 200, 200, 429, 429])
})
