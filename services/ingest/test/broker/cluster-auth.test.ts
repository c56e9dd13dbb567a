import Fastify from 'fastify'
import fc from 'fast-check'
import t from 'tap'
import { createDatabase } from '@esp/db'
import { createTestDatabase, makeDevice, makeUser } from '@esp/db/testing'
import { AuthThrottle, DeviceTokenGuesses, MemoryThrottleStore, type ThrottleSettings } from '@esp/domain'
import { buildServer } from '@esp/http'
import { testHttpOptions } from '@esp/test-helpers/server'
import { BROKER_AUTH_PATH, brokerAuthListener, brokerAuthRoutes } from '../../src/broker/cluster-auth.js'

/**
 * The clustered broker's HTTP auth backend (issue 24), asked as RabbitMQ 3.10 asks it: GET with
 * the fields its rabbitmq_auth_backend_http sends (seen on the wire, test/bench/findings.md
 * "Broker choice"). test/e2e/broker-cluster.test.ts checks the same policy through a real cluster.
 */
const SMALL: ThrottleSettings = { accountFailures: 3, addressFailures: 4, windowSeconds: 600, lockoutSeconds: 300, maxLockoutSeconds: 1200 }

t.test('who may connect, publish and subscribe through the cluster', async (t) => {
  const database = await createTestDatabase(t)
  let now = Date.parse('2026-11-26T12:00:00Z')
  const throttle = new AuthThrottle(new MemoryThrottleStore(() => now), SMALL)
  const app = Fastify({ logger: false })
  // A pool of the plugin's own, which the test closes to take the database away.
  const pool = createDatabase(database.url, { max: 2 })
  t.teardown(async () => { await pool.close().catch(() => {}) })
  const guesses = new DeviceTokenGuesses(throttle, () => now)
  await app.register(brokerAuthRoutes, { database: pool, throttle, guesses, now: () => new Date(now), log: app.log, deviceUser: 'device', internalUsers: new Set(['esp-ingest']) })
  t.teardown(async () => { await app.close() })

  const owner = await makeUser(database, { username: 'relay', email: 'relay@example.org', forwardingUsername: 'relay-fwd', forwardingToken: 'fwdtoken123' })
  await makeDevice(database, { ownerId: owner.id, name: 'kit', token: 'ab12cd', state: 'never_published' })
  await makeDevice(database, { ownerId: owner.id, name: 'gone', token: 'dead01', state: 'never_published', archivedAt: new Date() })

  const ask = async (what: string, query: Record<string, string>): Promise<string> => {
    const res = await app.inject({ method: 'GET', url: `${BROKER_AUTH_PATH}/${what}`, query })
    t.equal(res.statusCode, 200, `${what} answers 200`)
    return res.body
  }
  const device = (clientId: string): Record<string, string> => ({ username: 'device', vhost: '/', client_id: clientId })
  const publish = async (clientId: string, routingKey: string, username = 'device'): Promise<string> => await ask('topic', {
    username, vhost: '/', resource: 'topic', name: 'amq.topic', permission: 'write', routing_key: routingKey, 'variable_map.client_id': clientId, 'variable_map.username': username
  })
  const subscribe = async (username: string, routingKey: string): Promise<string> => await ask('topic', {
    username, vhost: '/', resource: 'topic', name: 'amq.topic', permission: 'read', routing_key: routingKey, 'variable_map.client_id': 'sub'
  })

  t.equal(await ask('user', { ...device('ab12cd'), password: 'device' }), 'allow', 'a device logs in with its client id only (as the anonymous user)')
  t.equal(await ask('user', { username: 'user', password: 'password', client_id: 'ab12cd' }), 'allow', "the 2016 prototype's placeholder credentials are no claim, and no refusal")
  t.equal(await ask('user', { username: 'relay-fwd', password: 'fwdtoken123', client_id: 'x' }), 'allow', 'forwarding credentials')
  t.equal(await ask('user', { username: 'relay-fwd', password: 'wrong', client_id: 'x' }), 'deny', 'a forwarding username with a wrong token is refused')
  t.equal(await ask('user', { username: 'relay-fwd', password: '', client_id: 'x' }), 'deny', 'and without one: the subscribe check trusts the username')
  t.equal(await ask('user', { username: 'esp-ingest', password: 'a guess', client_id: 'x' }), 'deny', "ingest's own broker user: the broker found its password wrong, and it is not guessed here")

  t.equal(await publish('ab12cd', 'device.sck.ab12cd.readings.raw'), 'allow', 'a device publishes its readings')
  t.equal(await publish('ab12cd', 'device.sck.ab12cd.info'), 'allow', 'and its status')
  t.equal(await publish('ab12cd', 'device.inventory'), 'allow', 'the factory report has no token')
  t.equal(await publish('other1', 'device.sck.ab12cd.readings'), 'deny', "not under another client's token")
  t.equal(await publish('x', 'device.sck.ab12cd.readings', 'ab12cd'), 'allow', 'a token given as the username counts as the client id')
  t.equal(await publish('dead01', 'device.sck.dead01.readings'), 'deny', "an archived device's token is refused")
  t.equal(await publish('ab12cd', 'devices.1.readings'), 'deny', 'a device does not publish live topics')
  t.equal(await ask('topic', { username: 'device', resource: 'topic', name: 'other', permission: 'write', routing_key: 'device.sck.ab12cd.readings', 'variable_map.client_id': 'ab12cd' }), 'deny', 'only through amq.topic')

  t.equal(await subscribe('device', 'device.sck.*.readings'), 'deny', 'device topics carry tokens: nobody subscribes')
  t.equal(await subscribe('device', 'device.#'), 'deny', 'not with a wildcard either')
  t.equal(await subscribe('device', 'devices.*.readings'), 'allow', 'live readings are public')
  t.equal(await subscribe('relay-fwd', '.forward.fwdtoken123.device.*.readings'), 'allow', 'forwarding topics to their user')
  t.equal(await subscribe('device', '.forward.fwdtoken123.device.*.readings'), 'deny', 'and to nobody else')
  t.equal(await subscribe('relay-fwd', '.forward.othertoken.device.*.readings'), 'deny', "nor another user's")

  t.equal(await ask('resource', { ...device('ab12cd'), resource: 'exchange', name: 'amq.topic', permission: 'write' }), 'allow', 'the topic exchange')
  t.equal(await ask('resource', { ...device('ab12cd'), resource: 'exchange', name: 'amq.direct', permission: 'write' }), 'deny', 'no other exchange')
  t.equal(await ask('resource', { ...device('sub'), resource: 'queue', name: 'mqtt-subscription-subqos0', permission: 'configure' }), 'allow', "the client's own subscription queue")
  t.equal(await ask('resource', { ...device('sub'), resource: 'queue', name: 'mqtt-subscription-otherqos0', permission: 'read' }), 'deny', "not another client's")
  t.equal(await ask('resource', { ...device('sub'), resource: 'queue', name: 'esp.ingest', permission: 'read' }), 'deny', 'never the ingest queue')

  // Guessing tokens: each refused one counts against the address the connect check saw.
  t.equal(await ask('vhost', { ...device('ffff00'), ip: '203.0.113.9' }), 'allow', 'a connection is let in')
  for (let i = 0; i < SMALL.addressFailures; i++) {
    const guess = `ffff0${i}`
    await ask('vhost', { ...device(guess), ip: '203.0.113.9' })
    t.equal(await publish(guess, `device.sck.${guess}.readings`), 'deny', `guess ${i + 1} is refused`)
  }
  t.equal(await ask('vhost', { ...device('ab12cd'), ip: '203.0.113.9' }), 'deny', 'then the address is locked out at connect, even with a real token')
  t.equal(await ask('vhost', { ...device('ab12cd'), ip: '198.51.100.7' }), 'allow', 'another address is not')
  now += SMALL.lockoutSeconds * 1000 + 1
  t.equal(await ask('vhost', { ...device('ab12cd'), ip: '203.0.113.9' }), 'allow', 'and the lock ends')
  t.equal(await ask('vhost', device('ab12cd')), 'deny', 'a connection without an address is refused: guesses would count against nothing')
  t.equal(await ask('vhost', { ...device('ab12cd'), ip: 'unknown' }), 'deny', 'and one whose address is not an IP address')
  t.equal(await ask('vhost', { ...device('ab12cd'), ip: '2001:db8::7' }), 'allow', 'IPv6 is an address')

  // The database goes away: tokens checked within the last minute still publish into the queue.
  now += 30_000
  t.equal(await publish('ab12cd', 'device.sck.ab12cd.readings'), 'allow', 'a token checked before')
  await pool.close()
  now += 120_000
  t.equal(await publish('ab12cd', 'device.sck.ab12cd.readings'), 'allow', 'is still let in while the database is away, however old the answer')
  t.equal(await publish('ab12cd', 'device.sck.ab12cd.readings'), 'allow', 'every time')
  t.equal(await publish('c0ffee', 'device.sck.c0ffee.readings'), 'deny', 'a token never checked is refused')
  t.equal(await ask('user', { ...device('ab12cd'), password: 'device' }), 'allow', 'devices log in without the database')
  t.equal(await subscribe('device', 'devices.*.readings'), 'allow', 'and live subscribers subscribe')

  const leaked = await app.inject({ method: 'GET', url: `${BROKER_AUTH_PATH}/user`, query: { username: 'relay-fwd', password: 'wrong', unknown_field: 'x' } })
  t.equal(leaked.body, 'deny', 'fields RabbitMQ does not send are ignored')
})

t.test('generated checks: any query gets allow or deny, or a 400 in the one error shape, and nothing is written', async (t) => {
  const database = await createTestDatabase(t)
  let now = Date.parse('2026-11-26T12:00:00Z')
  const throttle = new AuthThrottle(new MemoryThrottleStore(() => now), SMALL)
  // The platform's server: its error handler, validation and gates, as in production.
  const app = await buildServer(testHttpOptions)
  await app.register(brokerAuthRoutes, { database, throttle, guesses: new DeviceTokenGuesses(throttle, () => now), now: () => new Date(now += 1000), log: app.log, deviceUser: 'device', internalUsers: new Set(['esp-ingest']) })
  await app.ready()
  t.teardown(async () => { await app.close() })
  const owner = await makeUser(database, { username: 'gen', email: 'gen@example.org', forwardingUsername: 'gen-fwd', forwardingToken: 'gentoken1' })
  await makeDevice(database, { ownerId: owner.id, name: 'kit', token: 'ab12cd', state: 'never_published' })
  const counts = async (): Promise<unknown> => (await database.sql`
    select (select count(*) from readings)::int as readings, (select count(*) from devices)::int as devices, (select count(*) from users)::int as users,
      (select max(last_seen_at) from devices) as seen`)[0]
  const before = await counts()

  const FIELDS = ['username', 'password', 'vhost', 'client_id', 'ip', 'tags', 'resource', 'name', 'permission', 'routing_key', 'variable_map.client_id', 'variable_map.username']
  // Values near the real ones, and anything at all (long, unicode, separators, wildcards).
  const value = fc.oneof(
    fc.constantFrom('device', 'gen-fwd', 'gentoken1', 'esp-ingest', 'ab12cd', 'amq.topic', 'write', 'read', 'configure', 'topic', 'queue', 'exchange',
      'device.sck.ab12cd.readings', 'device.sck.*.readings', 'devices.#', '.forward.gentoken1.device.*.readings', 'bridge.device.sck.ab12cd.info', 'mqtt-subscription-ab12cdqos0', '203.0.113.9', ''),
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.string({ minLength: 1020, maxLength: 1100 })
  )
  const query = fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 12 })), value, { maxKeys: 8 })
  await fc.assert(fc.asyncProperty(fc.constantFrom('user', 'vhost', 'resource', 'topic'), query, async (what, q) => {
    const res = await app.inject({ method: 'GET', url: `${BROKER_AUTH_PATH}/${what}`, query: q })
    if (res.statusCode === 200) return res.body === 'allow' || res.body === 'deny'
    const body = res.json() as { id?: unknown, message?: unknown }
    return res.statusCode === 400 && typeof body.id === 'string' && typeof body.message === 'string'
  }), { numRuns: 300, ...(process.env.FUZZ_SEED === 'random' ? {} : { seed: Number(process.env.FUZZ_SEED ?? 24) || 24 }) })
  t.pass('every generated check answered allow, deny or a 400')
  t.same(await counts(), before, 'nothing was written')
})

t.test('the auth backend listens apart: not on the public port, only with the secret, throttled, and it logs no token', async (t) => {
  const database = await createTestDatabase(t)
  const now = Date.parse('2026-11-26T12:00:00Z')
  const throttle = new AuthThrottle(new MemoryThrottleStore(() => now), SMALL)
  const lines: string[] = []
  const app = await buildServer({ ...testHttpOptions, logLevel: 'trace', logStream: { write: (line: string) => { lines.push(line) } } })
  const secret = 'broker-auth-secret-0123456789'
  await app.register(brokerAuthListener, {
    host: '127.0.0.1',
    port: 0,
    secret,
    database,
    throttle,
    guesses: new DeviceTokenGuesses(throttle, () => now),
    now: () => new Date(now),
    log: app.log.child({ component: 'broker-auth' }),
    deviceUser: 'device',
    internalUsers: new Set(['esp-ingest'])
  })
  await app.ready()
  t.teardown(async () => { await app.close() })
  const owner = await makeUser(database, { username: 'apart', email: 'apart@example.org' })
  await makeDevice(database, { ownerId: owner.id, name: 'kit', token: 'be11ed', state: 'never_published' })

  const topic = `${BROKER_AUTH_PATH}/topic?username=device&vhost=%2F&resource=topic&name=amq.topic&permission=write&routing_key=device.sck.be11ed.readings&variable_map.client_id=be11ed`
  const publicAnswer = await app.inject({ url: topic })
  t.equal(publicAnswer.statusCode, 404, 'the public port does not know the route')
  t.match(publicAnswer.json(), { id: 'not_found', message: String, errors: null, url: null }, 'and answers as for any unknown route')
  t.equal((await app.inject({ url: `/v0${topic}` })).statusCode, 404, 'under /v0 neither')

  const listening = app.brokerAuthListening
  t.ok(listening !== undefined && listening.port > 0, 'the backend listens on a port of its own')
  const base = `http://127.0.0.1:${listening?.port ?? 0}`
  const basic = (password: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`broker:${password}`).toString('base64')}` })
  const ask = async (headers: Record<string, string>): Promise<{ status: number, body: string }> => {
    const res = await fetch(`${base}${topic}`, { headers })
    return { status: res.status, body: await res.text() }
  }
  t.same(await ask(basic(secret)), { status: 200, body: 'allow' }, 'the broker, with the secret, is answered')
  const refused = await ask({})
  t.equal(refused.status, 401, 'without the secret: 401')
  t.match(JSON.parse(refused.body), { id: 'unauthorized', message: String, errors: null }, 'in the one error shape, telling nothing of the token')
  for (let i = 1; i < SMALL.addressFailures; i++) t.equal((await ask(basic(`wrong-${i}`))).status, 401, `wrong secret ${i}`)
  t.equal((await ask(basic('wrong-again'))).status, 429, 'the address that guessed the secret is locked out')
  t.same(await ask(basic(secret)), { status: 200, body: 'allow' }, 'the right secret is never refused')
  t.equal((await fetch(`${base}/broker/auth/nothing`, { headers: basic(secret) })).status, 404, 'unknown paths: 404')

  const log = lines.join('')
  t.ok(lines.length > 0, 'the server logged')
  t.notOk(log.includes('be11ed'), 'no line holds the device token (client ids and routing keys stay out of the log)')
  t.notOk(log.includes(secret), 'nor the secret')
})
