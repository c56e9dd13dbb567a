import { existsSync, readdirSync } from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import t from 'tap'
import mqtt from 'mqtt'
import { createTestDatabase } from '@esp/db/testing'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

const MQTT_LINE = /MQTT\s+mqtt:\/\/([\d.]+):(\d+)/

t.test('pnpm start brings the whole platform up on the embedded defaults, and again on the same DATA_DIR', async (t) => {
  const dataDir = tempDataDir(t)
  for (const round of [1, 2]) {
    const platform = startProcess(t, 'scripts/start.ts', { PORT: '0', MQTT_PORT: '0', DATA_DIR: dataDir })
    const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
    const [, mqttHost, mqttPort] = await platform.waitFor(MQTT_LINE)
    t.match(platform.output(), /API docs\s+http:\/\/\S+\/docs/)
    t.ok(existsSync(path.join(dataDir, 'pg', 'PG_VERSION')), `round ${round}: the database lives under DATA_DIR`)

    const root = await fetch(`${base}/v0/`)
    t.equal(root.status, 200)
    t.match(await root.json(), { devices_url: `${base}/v0/devices`, api_documentation_url: `${base}/docs`, version_git: String })
    const missing = await fetch(`${base}/v0/no/such/thing`)
    t.equal(missing.status, 404)
    t.match(await missing.json(), { id: 'not_found', message: String, errors: null, url: null })
    const malformed = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":' })
    t.equal(malformed.status, 400)
    t.match(await malformed.json(), { id: 'bad_request' })
    // A route that needs a signed-in caller refuses an anonymous one before reading its body.
    const anonymous = await fetch(`${base}/v0/devices`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":' })
    t.equal(anonymous.status, 401)
    t.match(await anonymous.json(), { id: 'unauthorized' })
    const docs = await fetch(`${base}/docs/`)
    t.equal(docs.status, 200)
    t.match(await docs.text(), /swagger/i)
    t.same(await (await fetch(`${base}/health/ready`)).json(), { status: 'ready' })

    // A user registers and asks for a reset; the exporter in the same process writes the mail.
    const username = `walker${round}`
    const signup = await fetch(`${base}/v0/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, email: `${username}@example.org`, password: 'a long password' }) })
    t.equal(signup.status, 201)
    const session = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=${username}&password=a+long+password` })
    const { access_token: token } = await session.json() as { access_token: string }
    t.equal((await (await fetch(`${base}/v0/me`, { headers: { authorization: `Bearer ${token}` } })).json() as { username: string }).username, username)
    await fetch(`${base}/v0/password_resets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email_or_username: username }) })
    let mails: string[] = []
    for (let i = 0; i < 100 && mails.length < round; i++) {
      mails = existsSync(path.join(dataDir, 'outbox')) ? readdirSync(path.join(dataDir, 'outbox')).filter((f) => f.endsWith('.json')) : []
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    t.equal(mails.length, round, 'the reset mail reached the outbox under DATA_DIR')

    const client = await mqtt.connectAsync(`mqtt://${mqttHost}:${mqttPort}`, { clientId: '3f9a1c', reconnectPeriod: 0 })
    t.ok(client.connected, 'the broker accepts a CONNECT')
    await client.endAsync()

    platform.child.kill('SIGTERM')
    t.equal(await platform.exited, 0, `round ${round}: SIGTERM ends the process cleanly`)
  }
})

t.test('each service starts on its own against DATABASE_URL', async (t) => {
  const { url } = await createTestDatabase(t)
  for (const service of ['api', 'ingest', 'exporter']) {
    const proc = startProcess(t, `services/${service}/src/main.ts`, { PORT: '0', MQTT_PORT: '0', DATABASE_URL: url })
    const base = (await proc.waitFor(HTTP_LINE))[1] ?? ''
    t.match(proc.output(), /database\s+DATABASE_URL/)
    t.same(await (await fetch(`${base}/health/ready`)).json(), { status: 'ready' }, service)
    const root = await fetch(`${base}/v0/`)
    t.equal(root.status, service === 'api' ? 200 : 404, `${service}: GET /v0/`)
    if (service === 'ingest') t.match(proc.output(), MQTT_LINE)
    proc.child.kill('SIGTERM')
    t.equal(await proc.exited, 0)
  }
})

t.test('a busy port set explicitly is a hard error with a clear message', async (t) => {
  const { url } = await createTestDatabase(t)
  const blocker = net.createServer()
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { blocker.close() })
  const port = (blocker.address() as net.AddressInfo).port
  const proc = startProcess(t, 'services/api/src/main.ts', { PORT: String(port), DATABASE_URL: url })
  t.equal(await proc.exited, 1)
  t.match(proc.output(), new RegExp(`HTTP port ${port} is already in use \\(set by PORT\\)`))
})

t.test('bad configuration stops the start with every problem listed', async (t) => {
  const proc = startProcess(t, 'scripts/start.ts', { PORT: 'abc', MQTT_PORT: '99999', DATABASE_URL: 'mysql://nope', LOG_LEVEL: 'loud' })
  t.equal(await proc.exited, 1)
  const out = proc.output()
  t.match(out, /Invalid configuration/)
  for (const key of ['PORT', 'MQTT_PORT', 'DATABASE_URL', 'LOG_LEVEL']) t.match(out, new RegExp(`- ${key} `), key)
})
