import t, { type Test } from 'tap'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { sha256, type ThrottleSettings } from '@esp/domain'
import { freePort } from '@esp/db'
import { bearer, buildApi, signUp, type ApiHarness } from '@esp/test-helpers/api'
import { sample } from '@esp/test-helpers/metrics'
import { startRedis } from '@esp/test-helpers/redis'

// Issue 19: every failed credential check counts, per address and per account, on every path.
const SMALL: ThrottleSettings = { accountFailures: 3, addressFailures: 6, windowSeconds: 600, lockoutSeconds: 300, maxLockoutSeconds: 1200 }

let addresses = 0
const freshAddress = (): string => `198.51.100.${++addresses}`
const basic = (login: string, password: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}` })

/** The answer is the one error shape with a plausible Retry-After (within the lockout). */
function assertThrottled (t: Test, res: LightMyRequestResponse, maxSeconds: number, what: string): void {
  t.equal(res.statusCode, 429, what)
  t.same(res.json(), { id: 'too_many_requests', message: res.json().message, errors: null, url: null }, `${what}: the error body`)
  const seconds = Number(res.headers['retry-after'])
  t.ok(seconds >= 1 && seconds <= maxSeconds, `${what}: Retry-After ${String(res.headers['retry-after'])} within 1..${maxSeconds}`)
}

interface CredentialPath {
  name: string
  /** a request with the wrong secret, and with the right one, for a user */
  wrong: (user: User, i: number) => InjectOptions
  right: (user: User) => InjectOptions
  wrongStatus: number
  /** how many failures lock: the account's limit, or the address's where no account is named */
  limit: number
  /** a secret the platform issued: a valid one is never refused, only wrong ones are (issue 34) */
  issued?: boolean
}
type User = Awaited<ReturnType<typeof signUp>> & { client: { uid: string, secret: string }, resetCode: string }

async function prepareUser (harness: ApiHarness): Promise<User> {
  const user = await signUp(harness.app)
  const client = (await harness.app.inject({ method: 'POST', url: '/v0/applications', headers: bearer(user.token), payload: { name: 'app' } })).json()
  const resetCode = `reset-code-${user.id}-${'x'.repeat(40)}`
  await harness.database.sql`insert into password_resets (user_id, token_hash, expires_at) values (${user.id}, ${sha256(resetCode)}, now() + interval '1 hour')`
  return { ...user, client, resetCode }
}

const grant = (user: User, password: string, secret = user.client.secret): InjectOptions =>
  ({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'password', username: user.username, password, client_id: user.client.uid, client_secret: secret } })

const PATHS: CredentialPath[] = [
  { name: 'POST /v0/sessions', limit: SMALL.accountFailures, wrongStatus: 422, wrong: (u, i) => ({ method: 'POST', url: '/v0/sessions', payload: { username: u.username, password: `guess ${i}` } }), right: (u) => ({ method: 'POST', url: '/v0/sessions', payload: { username: u.username, password: u.password } }) },
  { name: 'HTTP Basic', limit: SMALL.accountFailures, wrongStatus: 401, wrong: (u, i) => ({ url: '/v0/me', headers: basic(u.username, `guess ${i}`) }), right: (u) => ({ url: '/v0/me', headers: basic(u.username, u.password) }) },
  { name: 'HTTP Basic by e-mail', limit: SMALL.accountFailures, wrongStatus: 401, wrong: (u, i) => ({ url: '/v0/me', headers: basic(u.email.toUpperCase(), `guess ${i}`) }), right: (u) => ({ url: '/v0/me', headers: basic(u.email, u.password) }) },
  { name: 'OAuth password grant', limit: SMALL.accountFailures, wrongStatus: 400, wrong: (u, i) => grant(u, `guess ${i}`), right: (u) => grant(u, u.password) },
  { name: 'OAuth client secret', issued: true, limit: SMALL.addressFailures, wrongStatus: 401, wrong: (u, i) => grant(u, u.password, `guess ${i}`), right: (u) => grant(u, u.password) },
  { name: 'Authorization: Bearer', issued: true, limit: SMALL.addressFailures, wrongStatus: 401, wrong: (_u, i) => ({ url: '/v0/me', headers: bearer(`forged.token.${i}`) }), right: (u) => ({ url: '/v0/me', headers: bearer(u.token) }) },
  { name: '?access_token=', issued: true, limit: SMALL.addressFailures, wrongStatus: 401, wrong: (_u, i) => ({ url: `/v0/me?access_token=forged${i}` }), right: (u) => ({ url: `/v0/me?access_token=${u.token}` }) },
  { name: '?bearer_token=', issued: true, limit: SMALL.addressFailures, wrongStatus: 401, wrong: (_u, i) => ({ url: `/v0/me?bearer_token=forged${i}` }), right: (u) => ({ url: `/v0/me?bearer_token=${u.token}` }) },
  { name: 'GET /v0/password_resets/:code', issued: true, limit: SMALL.addressFailures, wrongStatus: 404, wrong: (_u, i) => ({ url: `/v0/password_resets/guessed-code-${i}` }), right: (u) => ({ url: `/v0/password_resets/${u.resetCode}` }) },
  { name: 'PATCH /v0/password_resets/:code', issued: true, limit: SMALL.addressFailures, wrongStatus: 404, wrong: (_u, i) => ({ method: 'PATCH', url: `/v0/password_resets/guessed-code-${i}`, payload: { password: 'a new long password' } }), right: (u) => ({ method: 'PATCH', url: `/v0/password_resets/${u.resetCode}`, payload: { password: 'a new long password' } }) }
]

t.test('every credential path: the limit-th failure locks; a password is then refused even when right, an issued secret only when wrong', async (t) => {
  let now = Date.parse('2026-11-25T12:00:00Z')
  const harness = await buildApi(t, { deps: { clock: () => new Date(now) }, auth: { throttle: SMALL } })
  const { app } = harness
  for (const path of PATHS) {
    const user = await prepareUser(harness)
    const address = freshAddress()
    const statuses: number[] = []
    for (let i = 0; i < path.limit; i++) statuses.push((await app.inject({ ...path.wrong(user, i), remoteAddress: address })).statusCode)
    t.same(statuses, Array(path.limit).fill(path.wrongStatus), `${path.name}: ${path.limit} failures answered as usual`)
    if (path.issued === true) {
      assertThrottled(t, await app.inject({ ...path.wrong(user, path.limit), remoteAddress: address }), SMALL.lockoutSeconds, `${path.name}: a wrong secret while locked`)
      const valid = await app.inject({ ...path.right(user), remoteAddress: address })
      t.equal(valid.statusCode, 200, `${path.name}: the valid secret from the locked address passes (${valid.body.slice(0, 80)})`)
      now += SMALL.lockoutSeconds * 1000
      t.equal((await app.inject({ ...path.wrong(user, 0), remoteAddress: address })).statusCode, path.wrongStatus, `${path.name}: counted as usual after the lockout`)
      continue
    }
    assertThrottled(t, await app.inject({ ...path.right(user), remoteAddress: address }), SMALL.lockoutSeconds, `${path.name}: the right secret while locked`)
    // After the lockout the same caller gets in with the right secret.
    now += SMALL.lockoutSeconds * 1000
    const after = await app.inject({ ...path.right(user), remoteAddress: address })
    t.equal(after.statusCode, 200, `${path.name}: works again after the lockout (${after.body.slice(0, 80)})`)
  }
  const metrics = await app.inject({ url: '/metrics' })
  t.equal(sample(metrics.body, 'esp_auth_throttled_total', { reason: 'locked' }), PATHS.length, 'each refusal is counted')
})

t.test('the account limit holds across addresses and across paths', async (t) => {
  const harness = await buildApi(t, { auth: { throttle: SMALL } })
  const user = await prepareUser(harness)
  const wrong = [PATHS[0], PATHS[1], PATHS[3]]
  for (const [i, path] of wrong.entries()) t.equal((await harness.app.inject({ ...path?.wrong(user, i), remoteAddress: freshAddress() })).statusCode, path?.wrongStatus)
  for (const path of [PATHS[0], PATHS[1], PATHS[3]]) {
    if (path !== undefined) assertThrottled(t, await harness.app.inject({ ...path.right(user), remoteAddress: freshAddress() }), SMALL.lockoutSeconds, `${path.name} from a new address`)
  }
  const other = await prepareUser(harness)
  t.equal((await harness.app.inject({ ...PATHS[0]?.right(other), remoteAddress: freshAddress() })).statusCode, 200, 'other accounts are not affected')
})

t.test('the address limit holds across accounts; a success of the attacker does not reset it, and their own account is theirs', async (t) => {
  const harness = await buildApi(t, { auth: { throttle: SMALL } })
  const mine = await prepareUser(harness)
  const address = freshAddress()
  const statuses: number[] = []
  for (let i = 0; i < SMALL.addressFailures; i++) {
    statuses.push((await harness.app.inject({ method: 'POST', url: '/v0/sessions', remoteAddress: address, payload: { username: `victim${i}`, password: 'guess' } })).statusCode)
    statuses.push((await harness.app.inject({ method: 'POST', url: '/v0/sessions', remoteAddress: address, payload: { username: mine.username, password: mine.password } })).statusCode)
  }
  t.same(statuses.slice(0, -1), [...Array(SMALL.addressFailures - 1).fill([422, 200]).flat(), 422])
  const victim = await prepareUser(harness)
  assertThrottled(t, await harness.app.inject({ ...PATHS[0]?.right(victim), remoteAddress: address }), SMALL.lockoutSeconds, 'the spraying address, for any account it never signed in to')
  t.equal((await harness.app.inject({ ...PATHS[0]?.right(victim), remoteAddress: freshAddress() })).statusCode, 200, 'the accounts themselves are not locked')
  t.equal((await harness.app.inject({ ...PATHS[0]?.right(mine), remoteAddress: address })).statusCode, 200, 'an account that signed in from the address is trusted there')
})

t.test('parallel guesses: no more checks than the limit', async (t) => {
  const harness = await buildApi(t, { auth: { throttle: SMALL } })
  const user = await prepareUser(harness)
  const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) =>
    await harness.app.inject({ method: 'POST', url: '/v0/sessions', remoteAddress: freshAddress(), payload: { username: user.username, password: `guess ${i}` } })))
  const statuses = answers.map((res) => res.statusCode)
  t.equal(statuses.filter((s) => s === 422).length, SMALL.accountFailures, 'only as many passwords were checked as the account allows')
  t.equal(statuses.filter((s) => s === 429).length, 40 - SMALL.accountFailures)
})

t.test('the defaults: 10 failures an account, then 429 for 15 minutes; 5 for a client that signed in before', async (t) => {
  const { app } = await buildApi(t)
  // signUp signed in from inject's address (127.0.0.1): that client is the owner's.
  const user = await signUp(app)
  const attacker = freshAddress()
  for (let i = 0; i < 10; i++) {
    const res = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: `guess ${i}` }, remoteAddress: attacker })
    if (res.statusCode !== 422) { t.fail(`attempt ${i + 1} got ${res.statusCode}`); break }
  }
  const locked = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: user.password }, remoteAddress: freshAddress() })
  assertThrottled(t, locked, 900, 'the 11th attempt, from anywhere else')
  t.equal(locked.headers['retry-after'], '900')
  t.equal((await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: user.password } })).statusCode, 200, 'the owner\'s client')
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: `typo ${i}` } })).statusCode, 422)
  assertThrottled(t, await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: user.password } }), 900, 'the owner\'s client after 5 typos')
})

async function twoInstances (t: Test, redisUrl: string, throttle: ThrottleSettings, clock: () => Date): Promise<[FastifyInstance, FastifyInstance, User]> {
  const first = await buildApi(t, { deps: { clock }, auth: { throttle, redisUrl } })
  // Replicas share the database: the second checks Basic credentials against the first's.
  const second = await buildApi(t, { deps: { clock }, auth: { throttle, redisUrl, database: first.database } })
  return [first.app, second.app, await prepareUser(first)]
}

t.test('with REDIS_URL two instances share the count; the lockout ends and doubles', async (t) => {
  const redisUrl = await startRedis(t)
  // One test clock for both instances: the lockouts end when it is advanced, not in real time
  // (Redis's own expiry, minutes away, never decides).
  let now = Date.parse('2026-11-25T12:00:00Z')
  const LOCKOUT = { ...SMALL, lockoutSeconds: 300, maxLockoutSeconds: 600 }
  const [first, second, user] = await twoInstances(t, redisUrl, LOCKOUT, () => new Date(now))
  // GET /v0/ answers 200 to anyone whose credentials pass, and 401 otherwise.
  const from = async (app: FastifyInstance, password: string) => await app.inject({ url: '/v0/', headers: basic(user.username, password), remoteAddress: freshAddress() })
  t.same([(await from(first, 'a')).statusCode, (await from(second, 'b')).statusCode, (await from(first, 'c')).statusCode], [401, 401, 401])
  assertThrottled(t, await from(second, user.password), 300, 'the other instance, right password')
  assertThrottled(t, await first.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: user.password }, remoteAddress: freshAddress() }), 300, 'a login on the first')
  now += 300_000 - 1
  assertThrottled(t, await from(second, user.password), 1, 'still locked a millisecond before the end')
  now += 1
  t.same([(await from(second, 'd')).statusCode, (await from(first, 'e')).statusCode, (await from(second, 'f')).statusCode], [401, 401, 401], 'counted again after the lockout')
  const again = await from(first, user.password)
  assertThrottled(t, again, 600, 'locked again')
  t.equal(again.headers['retry-after'], '600', 'the second lockout is twice as long')
  now += 600_000
  t.equal((await from(second, user.password)).statusCode, 200, 'the right password after the lockout')
  // Bad tokens from one address, alternating instances, lock that address on both.
  const address = freshAddress()
  for (let i = 0; i < SMALL.addressFailures; i++) t.equal((await (i % 2 === 0 ? first : second).inject({ url: '/v0/', headers: bearer(`forged.token.${i}`), remoteAddress: address })).statusCode, 401)
  assertThrottled(t, await first.inject({ url: '/v0/', headers: bearer('forged.token.again'), remoteAddress: address }), 300, 'a bad token from the locked address')
  t.equal((await second.inject({ url: '/v0/', headers: bearer(user.token), remoteAddress: address })).statusCode, 200, 'a good token from the locked address')
})

t.test('a Redis that cannot be reached: logins still work and are still counted (in memory)', async (t) => {
  const redisUrl = `redis://127.0.0.1:${await freePort()}`
  const { app } = await buildApi(t, { auth: { throttle: SMALL, redisUrl } })
  const user = await signUp(app)
  for (let i = 0; i < SMALL.accountFailures; i++) t.equal((await app.inject({ url: '/v0/me', headers: basic(user.username, 'wrong'), remoteAddress: freshAddress() })).statusCode, 401)
  assertThrottled(t, await app.inject({ url: '/v0/me', headers: basic(user.username, user.password), remoteAddress: freshAddress() }), SMALL.lockoutSeconds, 'locked in memory')
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode, 200, 'a token names no account, and the address is below its limit')
})
