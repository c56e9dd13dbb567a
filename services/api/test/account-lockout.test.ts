import http from 'node:http'
import t, { type Test } from 'tap'
import type { AuthOptions } from '@esp/http'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'
import { sample } from '@esp/test-helpers/metrics'
import { startRedis } from '@esp/test-helpers/redis'

// Issue 34 §3, over real HTTP from several loopback addresses (127.0.0.2, 127.0.0.3, ... are this
// machine's own): one account, one counter; the owner signs in while strangers are locked out;
// a valid token passes from an address that sent many bad ones. The platform's default limits.

interface Answer { status: number, headers: http.IncomingHttpHeaders, body: string, ms: number }

function client (port: number) {
  return async (localAddress: string, method: string, path: string, options: { json?: unknown, headers?: Record<string, string> } = {}): Promise<Answer> => {
    const body = options.json === undefined ? undefined : JSON.stringify(options.json)
    const started = performance.now()
    return await new Promise<Answer>((resolve, reject) => {
      const request = http.request({
        host: '127.0.0.1',
        port,
        method,
        path,
        localAddress,
        agent: false,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers }
      }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }) })
        res.on('error', reject)
      })
      request.on('error', reject)
      request.end(body)
    })
  }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN

async function platform (t: Test, auth: Partial<AuthOptions>) {
  const harness = await buildApi(t, { auth })
  await harness.app.listen({ port: 0, host: '127.0.0.1' })
  const address = harness.app.server.address()
  t.teardown(() => { harness.app.server.closeAllConnections() })
  return { ...harness, send: client(typeof address === 'object' && address !== null ? address.port : 0) }
}

for (const store of ['memory', 'redis'] as const) {
  t.test(`${store} store: strangers are locked out of an account, its owner is not`, async (t) => {
    const { app, send } = await platform(t, store === 'redis' ? { redisUrl: await startRedis(t) } : {})
    const owner = await signUp(app)
    const browser = '127.0.0.2'

    // The owner signs in from a browser, which keeps the device cookie.
    const first = await send(browser, 'POST', '/v0/sessions', { json: { username: owner.username, password: owner.password } })
    t.equal(first.status, 200)
    const setCookie = String(first.headers['set-cookie'] ?? '')
    t.match(setCookie, new RegExp(`^esp_device_${owner.id}=[\\w-]+\\.\\d+\\.[\\w-]+; Path=/v0/sessions; Max-Age=7776000; HttpOnly; SameSite=Lax$`), 'a device cookie for this account, only for this route')
    const cookie = setCookie.split(';')[0] ?? ''

    // The attacker, from five addresses, mixes username and e-mail; the same for an account that does not exist.
    const attackers = ['127.0.0.10', '127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14']
    const attempt = async (i: number, username: string, email: string, rightPassword?: string): Promise<Answer> => {
      const login = i % 2 === 0 ? username : (i % 4 === 1 ? email.toUpperCase() : email)
      // From the 12th attempt on, the attacker also tries the right password: it gets nowhere.
      const password = rightPassword !== undefined && i >= 11 && i % 3 === 0 ? rightPassword : `guess ${i}`
      return await send(attackers[i % attackers.length] ?? '', 'POST', '/v0/sessions', { json: { username: login, password } })
    }
    const existing: Answer[] = []
    const missing: Answer[] = []
    // In step, so both see the same load on the machine when timed.
    for (let i = 0; i < 26; i++) {
      existing.push(await attempt(i, owner.username, owner.email, owner.password))
      missing.push(await attempt(i, `nobody${owner.id}`, `nobody${owner.id}@example.org`))
    }
    const statuses = existing.map((a) => a.status)
    // 10 guesses checked (the account's limit, both identifiers together), then every further
    // attempt refused: as a wrong password until the identifier typed reaches the limit itself.
    t.same(statuses, [...Array(20).fill(422), ...Array(6).fill(429)], `the attacker's answers: ${statuses.join(' ')}`)
    t.notOk(existing.some((a) => a.status === 200), 'the right password, tried after the bound, did not get in')
    t.same(missing.map((a) => a.status), statuses, 'an account that does not exist answers the same, attempt by attempt')
    t.same(missing.map((a) => a.body), existing.map((a) => a.body), 'with the same bodies')
    t.same(missing.map((a) => a.headers['retry-after']), existing.map((a) => a.headers['retry-after']), 'and the same Retry-After')
    t.notOk(existing.some((a) => a.headers['set-cookie'] !== undefined), 'no failed attempt gets a cookie')
    const phase = (answers: Answer[], from: number, to: number): number => median(answers.slice(from, to).map((a) => a.ms))
    const [mine, nobody] = [phase(existing, 0, 20), phase(missing, 0, 20)]
    t.comment(`median ms of the 422s: ${mine.toFixed(1)} (checked ${phase(existing, 0, 10).toFixed(1)}, refused as wrong ${phase(existing, 10, 20).toFixed(1)}); no such account ${nobody.toFixed(1)}`)
    // Each costs one password hash. Loose bounds: other test files share the machine.
    t.ok(mine < nobody * 3 && nobody < mine * 3, 'an existing account\'s answers cost what a missing one\'s do')

    // During the lockout: a stranger with the right password is refused, the owner is not.
    for (const login of [owner.email, owner.username]) {
      const refused = await send('127.0.0.30', 'POST', '/v0/sessions', { json: { username: login, password: owner.password } })
      t.equal(refused.status, 429, `the right password from a new address, without the cookie, is refused (${login})`)
      t.ok(Number(refused.headers['retry-after']) > 800, 'for the lockout')
    }
    const withCookie = await send('127.0.0.31', 'POST', '/v0/sessions', { json: { username: owner.email, password: owner.password }, headers: { cookie } })
    t.equal(withCookie.status, 200, 'the owner\'s browser, with its device cookie, even from a new address')
    t.match(String(withCookie.headers['set-cookie']), `esp_device_${owner.id}=`, 'and gets a fresh cookie')
    const sameAddress = await send(browser, 'POST', `/v0/sessions?username=${owner.username}&password=${encodeURIComponent(owner.password)}`)
    t.equal(sameAddress.status, 200, 'a client without cookies, from the address the owner signed in from')
    const me = await send('127.0.0.31', 'GET', '/v0/me', { headers: bearer(JSON.parse(withCookie.body).access_token) })
    t.equal(JSON.parse(me.body).id, owner.id, 'the token works')

    // Another account's cookie is no cookie of this one.
    const other = await signUp(app)
    const othersCookie = String((await send('127.0.0.40', 'POST', '/v0/sessions', { json: { username: other.username, password: other.password } })).headers['set-cookie']).split(';')[0] ?? ''
    const borrowed = othersCookie.replace(`esp_device_${other.id}=`, `esp_device_${owner.id}=`)
    t.equal((await send('127.0.0.41', 'POST', '/v0/sessions', { json: { username: owner.username, password: owner.password }, headers: { cookie: borrowed } })).status, 429, 'a cookie of another account does not open this one')

    const metrics = await app.inject({ url: '/metrics' })
    // 10 answered as wrong and 6 with 429 (existing), 6 (missing), 2 (new address), 1 (borrowed cookie)
    t.equal(sample(metrics.body, 'esp_auth_throttled_total', { reason: 'locked' }), 25, 'every refusal is counted')
  })
}

t.test('a valid token passes from an address that sent many stale and forged ones', async (t) => {
  const { app, send } = await platform(t, {})
  const owner = await signUp(app)
  const colleague = await signUp(app)
  // A stale token: the colleague changed the password, which revokes it.
  const changed = await app.inject({ method: 'PATCH', url: '/v0/me', headers: bearer(colleague.token), payload: { password: 'a brand new secret' } })
  t.equal(changed.statusCode, 200)
  const office = '127.0.0.50'
  const statuses: number[] = []
  for (let i = 0; i < 34; i++) {
    const token = i % 2 === 0 ? colleague.token : `forged.token.${i}`
    statuses.push((await send(office, 'GET', i % 3 === 0 ? `/v0/me?access_token=${token}` : '/v0/me', i % 3 === 0 ? {} : { headers: bearer(token) })).status)
  }
  t.same(statuses, [...Array(30).fill(401), ...Array(4).fill(429)], 'bad tokens: 30 answered 401, then slowed with 429')
  const valid = await send(office, 'GET', '/v0/me', { headers: bearer(owner.token) })
  t.equal(valid.status, 200, 'a valid bearer token from the same address is accepted')
  t.equal(JSON.parse(valid.body).id, owner.id)
  t.equal((await send(office, 'GET', `/v0/me?access_token=${owner.token}`)).status, 200, 'as is ?access_token=')
  t.equal((await send(office, 'GET', '/v0/me', { headers: bearer(colleague.token) })).status, 429, 'the stale one still is not')
  const signIn = await send(office, 'POST', '/v0/sessions', { json: { username: colleague.username, password: 'a brand new secret' } })
  t.equal(signIn.status, 200, 'and stale tokens do not lock the sign-ins behind the address')
})

t.test('the OAuth password grant follows the same rules; a reset from the mailbox ends strangers\' lockout', async (t) => {
  const { app, database, send } = await platform(t, {})
  const owner = await signUp(app)
  const application = JSON.parse((await send('127.0.0.60', 'POST', '/v0/applications', { headers: bearer(owner.token), json: { name: 'app' } })).body)
  const grant = async (from: string, username: string, password: string, headers: Record<string, string> = {}): Promise<Answer> =>
    await send(from, 'POST', '/oauth/token', { json: { grant_type: 'password', username, password, client_id: application.uid, client_secret: application.secret }, headers })
  const granted = await grant('127.0.0.60', owner.email, owner.password)
  t.equal(granted.status, 200)
  const cookie = String(granted.headers['set-cookie']).split(';')[0] ?? ''
  t.match(String(granted.headers['set-cookie']), 'Path=/oauth/token', 'the cookie rides only on the token endpoint')
  // Ten guesses through the grant and the sessions route together lock the account for strangers.
  for (let i = 0; i < 10; i++) {
    const from = `127.0.0.${61 + (i % 3)}`
    const status = i % 2 === 0 ? (await grant(from, owner.username, `guess ${i}`)).status : (await send(from, 'POST', '/v0/sessions', { json: { username: owner.email, password: `guess ${i}` } })).status
    t.equal(status, i % 2 === 0 ? 400 : 422)
  }
  t.equal((await grant('127.0.0.65', owner.username, owner.password)).status, 400, 'a stranger with the right password: invalid_grant, as for a wrong one')
  t.equal((await grant('127.0.0.66', owner.username, owner.password, { cookie })).status, 200, 'the owner\'s client with its cookie')

  // The owner, on a new machine without the cookie, resets the password through the mail.
  const code = `reset-code-${owner.id}-${'x'.repeat(40)}`
  await database.sql`insert into password_resets (user_id, token_hash, expires_at) values (${owner.id}, encode(sha256(${code}::bytea), 'hex'), now() + interval '1 hour')`
  const reset = await send('127.0.0.70', 'PATCH', `/v0/password_resets/${code}`, { json: { password: 'a new long password' } })
  t.equal(reset.status, 200)
  t.match(String(reset.headers['set-cookie']), `esp_device_${owner.id}=`, 'the reset hands that machine a device cookie')
  t.equal((await send('127.0.0.71', 'POST', '/v0/sessions', { json: { username: owner.username, password: 'a new long password' } })).status, 200, 'and strangers\' lockout of the account is over')
})
