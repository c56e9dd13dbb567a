import t from 'tap'
import { ingestService } from '@esp/ingest'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'
import { connectMqtt, until } from '@esp/test-helpers/mqtt'
import { makeDevice } from '@esp/db/testing'

const PASSWORD = 'Hunter2-secret-password'
const NEW_PASSWORD = 'Another-secret-password-42'
const RESET_CODE = 'reset-code-that-is-a-secret-0123456789'
const DEVICE_TOKEN = 'c0ffee'
const MAC = '5e:cf:7f:d1:75:99'
const DATABASE_PASSWORD = 'db-password-in-a-url'

t.test('JSON log lines carry request ids and none of the secrets a request brings', async (t) => {
  const lines: string[] = []
  const harness = await buildApi(t, {
    server: { logLevel: 'trace', logStream: { write: (line) => { lines.push(line) } } },
    extra: async (app, database) => {
      await app.register(ingestService, { database, maxValues: 1000, maxFutureSeconds: 86_400, mqtt: { host: '127.0.0.1', port: 0, explicit: true } })
      // What a careless handler might log, and a failure whose message holds a connection string.
      app.post('/v0/test/echo', async (request) => {
        request.log.info({ headers: request.headers, body: request.body }, 'echo')
        return { ok: true }
      })
      app.get('/v0/test/fail', async () => { throw new Error(`connect ECONNREFUSED postgres://esp:${DATABASE_PASSWORD}@db:5432/esp`) })
    }
  })
  const { app, database } = harness
  const user = await signUp(app, { password: PASSWORD })
  const { id: device } = await makeDevice(database, { ownerId: user.id, mac: MAC, token: DEVICE_TOKEN, kitId: 26 })
  const basic = Buffer.from(`${user.username}:${PASSWORD}`).toString('base64')
  const secrets = { password: PASSWORD, newPassword: NEW_PASSWORD, accessToken: user.token, basic, resetCode: RESET_CODE, deviceToken: DEVICE_TOKEN, mac: MAC, databasePassword: DATABASE_PASSWORD }

  const requests = [
    { method: 'POST' as const, url: '/v0/sessions', payload: { username: user.username, password: PASSWORD } },
    { method: 'POST' as const, url: '/v0/sessions', payload: `username=${user.username}&password=${encodeURIComponent(PASSWORD)}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    { method: 'POST' as const, url: `/v0/sessions?username=${user.username}&password=${encodeURIComponent(PASSWORD)}` },
    { method: 'GET' as const, url: '/v0/me', headers: bearer(user.token) },
    { method: 'GET' as const, url: `/v0/me?access_token=${user.token}` },
    { method: 'GET' as const, url: `/v0/me?bearer_token=${user.token}&pretty=true` },
    { method: 'GET' as const, url: '/v0/me', headers: { authorization: `Basic ${basic}` } },
    // Parameter names percent-encoded: the query parser decodes them, so must the log's mask.
    { method: 'GET' as const, url: `/v0/me?access%5Ftoken=${user.token}` },
    { method: 'GET' as const, url: `/v0/me?pretty=true&Bearer%5fToken=${user.token}` },
    { method: 'POST' as const, url: `/v0/sessions?username=${user.username}&pass%77ord=${encodeURIComponent(PASSWORD)}` },
    { method: 'GET' as const, url: `/v0/password%5Fresets/${RESET_CODE}` },
    { method: 'GET' as const, url: `/v0/password_resets/${RESET_CODE}` },
    { method: 'PUT' as const, url: `/v0/password_resets/${RESET_CODE}?password=${NEW_PASSWORD}`, payload: { password: NEW_PASSWORD } },
    { method: 'GET' as const, url: `/v0/devices/${device}`, headers: bearer(user.token) },
    { method: 'POST' as const, url: `/v0/devices/${device}/readings`, headers: bearer(user.token), payload: { data: [{ recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 55, value: 1 }] }] } },
    { method: 'POST' as const, url: '/v0/add', headers: { 'x-smartcitizenmacaddr': MAC, 'x-smartcitizendata': '[{"temp":"21.5","timestamp":"2026-11-01 10:00:00"}]' } },
    { method: 'POST' as const, url: '/v0/test/echo', headers: { ...bearer(user.token), cookie: `session=${user.token}` }, payload: { password: PASSWORD, device_token: DEVICE_TOKEN, token: user.token, access_token: user.token, mac_address: MAC } },
    { method: 'GET' as const, url: '/v0/test/fail' },
    { method: 'GET' as const, url: '/v0/me', headers: { authorization: `Bearer ${user.token}x` } }
  ]
  for (const request of requests) {
    const res = await app.inject(request)
    t.ok(res.statusCode < 600, `${request.method} ${request.url.replace(/\?.*/, '')}: ${res.statusCode}`)
    t.match(res.headers['x-request-id'], /^[\w-]+$/, 'the request id is handed back')
  }
  t.equal((await app.inject({ url: '/v0/test/fail' })).statusCode, 500, 'the failure is a logged 500')

  // A device over MQTT: its client id and topics carry the token.
  await app.listen({ host: '127.0.0.1', port: 0 })
  const kit = await connectMqtt(t, `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`, { clientId: DEVICE_TOKEN })
  await kit.publishAsync(`device/sck/${DEVICE_TOKEN}/readings`, JSON.stringify({ data: [{ recorded_at: '2026-11-01T11:00:00Z', sensors: [{ id: 55, value: 2 }] }] }), { qos: 1 })
  await kit.publishAsync(`device/sck/${DEVICE_TOKEN}/readings`, '{"data":"bad"}', { qos: 1 })
  await kit.endAsync()
  await until(() => app.mqttStats.connections === 0, 5000, 'the device to disconnect')

  const text = lines.join('')
  t.ok(lines.length > 20, `${lines.length} log lines were written`)
  const parsed = lines.map((line) => JSON.parse(line) as { reqId?: string, req?: { url: string }, msg: string })
  const incoming = parsed.filter((line) => line.msg === 'incoming request')
  // sign-up and login, the requests above, the second failure
  t.equal(incoming.length, 2 + requests.length + 1, 'one line per request')
  t.ok(incoming.every((line) => typeof line.reqId === 'string' && line.reqId.length > 0), 'every request line carries its request id')
  t.ok(text.includes('[REDACTED]'), 'secrets are replaced, not dropped silently')
  t.ok(incoming.some((line) => line.req?.url === '/v0/me?access_token=[REDACTED]'), 'the URL is logged with its token masked')
  t.ok(incoming.some((line) => line.req?.url === '/v0/password_resets/[REDACTED]'), 'the reset code in the path is masked')
  t.ok(parsed.some((line) => line.msg === 'request failed'), 'the failure is logged')
  for (const [name, secret] of Object.entries(secrets)) {
    const found = lines.filter((line) => line.includes(secret))
    t.same(found, [], `no log line holds the ${name}`)
  }
})

t.test('at the production level a served request writes nothing, and what is logged still carries its id', async (t) => {
  const lines: string[] = []
  const harness = await buildApi(t, {
    server: { logLevel: 'warn', logStream: { write: (line) => { lines.push(line) } } },
    extra: async (app) => {
      app.get('/v0/test/quiet', async (request) => { request.log.info('below the level'); return { ok: true } })
      app.get('/v0/test/loud', async (request) => { request.log.warn({ token: 'a-secret-token' }, 'worth a line'); return { ok: true } })
    }
  })
  const quiet = await harness.app.inject({ url: '/v0/test/quiet' })
  t.equal(quiet.statusCode, 200)
  t.same(lines.filter((l) => l.includes(quiet.headers['x-request-id'] as string)), [], 'nothing for a request that logs below the level')
  const loud = await harness.app.inject({ url: '/v0/test/loud', headers: { 'x-request-id': 'loud-1' } })
  t.equal(loud.statusCode, 200)
  const line = lines.find((l) => l.includes('worth a line'))
  t.match(JSON.parse(line ?? '{}'), { reqId: 'loud-1', level: 40, msg: 'worth a line', token: '[REDACTED]' }, 'the request\'s id and the redaction, as pino\'s child writes them')
})
