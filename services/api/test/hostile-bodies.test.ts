import net from 'node:net'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { parseJsonObject } from '@esp/domain'
import { MAX_BODY_DEPTH, nestedDeeperThan } from '@esp/domain'
import { LINGER_MS } from '@esp/http'
import { bearer, buildApi, multipart, signUp, signUpAs } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

const deep = (levels: number, leaf = '1'): string => '{"a":'.repeat(levels) + leaf + '}'.repeat(levels)
const deepArray = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels)

t.test('malformed multipart on every multipart route: 400 in the one error shape, nothing written', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'sd card' } })
  const deviceId = (created.json() as { id: number }).id
  const counts = async () => (await database.sql`
    select (select count(*) from reading_imports)::int as imports, (select max(updated_at) from users) as touched,
           (select profile_picture from users where id = ${owner.id}) as picture`)[0]
  const before = await counts()

  const long = 'b'.repeat(300)
  const bodies: Array<{ name: string, type: string, payload: string }> = [
    { name: 'no boundary', type: 'multipart/form-data', payload: '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n' },
    { name: 'an empty boundary', type: 'multipart/form-data; boundary=', payload: '--\r\n\r\n' },
    { name: 'an unterminated body', type: 'multipart/form-data; boundary=x', payload: '--x\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\nabc' },
    { name: 'an unterminated field', type: 'multipart/form-data; boundary=x', payload: '--x\r\nContent-Disposition: form-data; name="key"\r\n\r\nabc' },
    { name: 'a boundary over 256 characters', type: `multipart/form-data; boundary=${long}`, payload: `--${long}\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--${long}--\r\n` }
  ]
  const routes = [
    { method: 'POST' as const, url: '/v0/uploads', headers: {} },
    { method: 'POST' as const, url: `/v0/devices/${deviceId}/readings/csv`, headers: bearer(owner.token) },
    { method: 'PATCH' as const, url: '/v0/me', headers: bearer(owner.token) }
  ]
  for (const route of routes) {
    for (const body of bodies) {
      const res = await app.inject({ method: route.method, url: route.url, headers: { ...route.headers, 'content-type': body.type }, payload: body.payload })
      t.equal(res.statusCode, 400, `${route.method} ${route.url}, ${body.name}: 400 (${res.body.slice(0, 120)})`)
      t.match(res.json(), { id: 'bad_request', message: /multipart/i, errors: null, url: null }, `${route.url}, ${body.name}: the error shape`)
    }
  }
  t.same(await counts(), before, 'nothing was written')
})

t.test('ids past the int4 range in bodies: 422 naming the field', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const counts = async () => (await database.sql`
    select (select count(*) from experiments)::int as experiments, (select count(*) from sensors)::int as sensors,
           (select count(*) from devices)::int as devices`)[0]
  const before = await counts()
  const huge = [99999999999, 2147483648, '99999999999', '2147483648', 1e300, -1]
  for (const id of huge) {
    const experiment = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { name: 'x', device_ids: [id] } })
    t.equal(experiment.statusCode, 422, `experiment device_ids [${id}]`)
    t.match(experiment.json(), { id: 'unprocessable_entity', errors: { device_ids: [String] } })
    const form = await app.inject({ method: 'POST', url: '/v0/experiments', headers: { ...bearer(owner.token), 'content-type': 'application/x-www-form-urlencoded' }, payload: `name=x&device_ids[]=${encodeURIComponent(String(id))}` })
    t.equal(form.statusCode, 422, `experiment device_ids[] form field ${id}`)
    for (const field of ['measurement_id', 'parent_id']) {
      const sensor = await app.inject({ method: 'POST', url: '/v0/sensors', headers: bearer(admin.token), payload: { name: 's', description: 'd', unit: 'u', [field]: id } })
      t.equal(sensor.statusCode, 422, `sensor ${field} ${id}`)
      t.match(sensor.json(), { errors: { [field]: [String] } })
    }
    const device = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'x', kit_id: id } })
    t.equal(device.statusCode, 422, `device kit_id ${id}`)
  }
  const largest = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { name: 'x', device_ids: [2147483647] } })
  t.equal(largest.statusCode, 422, 'the largest int4 is an id, of no device')
  t.match(largest.json(), { errors: { device_ids: ['unknown devices: 2147483647'] } })
  for (const field of ['measurement_id', 'parent_id']) {
    const sensor = await app.inject({ method: 'POST', url: '/v0/sensors', headers: bearer(admin.token), payload: { name: 's', description: 'd', unit: 'u', [field]: 2147483647 } })
    t.equal(sensor.statusCode, 422, `sensor ${field}: the largest int4 names no record`)
    t.match(sensor.json(), { errors: { [field]: [String] } })
  }
  t.same(await counts(), before, 'nothing was written')
})

t.test('free JSON: too deep or not well-formed is a 4xx, never a 500', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const researcher = await signUpAs(harness, 'researcher')
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(researcher.token), payload: { name: 'meta', meta: { ok: [1, { two: 'é😀' }] } } })
  t.equal(created.statusCode, 201, 'ordinary meta, astral characters included, is stored')
  const id = (created.json() as { id: number }).id
  const json = { 'content-type': 'application/json' }
  const state = async () => (await database.sql`select meta, updated_at from devices where id = ${id}`)[0]
  const before = await state()

  const bad: Array<[string, string]> = [
    ['meta nested 5,000 levels', `{"meta":${deep(5000)}}`],
    ['meta nested 100,000 levels of arrays', `{"meta":${deepArray(100_000)}}`],
    ['meta nested 65 levels', `{"meta":${deep(65)}}`],
    ['a lone high surrogate', '{"meta":{"a":"\\ud800"}}'],
    ['a lone low surrogate in a key', '{"meta":{"\\udc00":1}}'],
    ['a surrogate pair the wrong way round', '{"meta":["\\udc00\\ud800"]}'],
    ['NUL below the body check\'s depth', `{"meta":${deep(40, '"\\u0000"')}}`],
    ['postprocessing meta nested 5,000 levels', `{"postprocessing_attributes":{"meta":${deep(5000)}}}`],
    ['postprocessing meta with a lone surrogate', '{"postprocessing_attributes":{"meta":{"a":"\\ud800"}}}']
  ]
  for (const [name, payload] of bad) {
    const patch = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: { ...bearer(researcher.token), ...json }, payload })
    t.ok(patch.statusCode >= 400 && patch.statusCode < 500, `PATCH, ${name}: ${patch.statusCode}`)
    t.match(patch.json(), { id: String, message: String }, `${name}: the error shape`)
    const post = await app.inject({ method: 'POST', url: '/v0/devices', headers: { ...bearer(researcher.token), ...json }, payload: payload.replace('{', '{"name":"x",') })
    t.ok(post.statusCode >= 400 && post.statusCode < 500, `POST, ${name}: ${post.statusCode}`)
  }
  t.same(await state(), before, 'nothing was written')
  const shallow = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: { ...bearer(researcher.token), ...json }, payload: '{"meta":{"a":"\\ud800"}}' })
  t.match(shallow.json(), { id: 'bad_request', errors: { 'meta.a': [/lone surrogate/] } }, 'the field is named')
  // Text jsonb cannot hold is refused before any route runs, wherever it would have been kept: a
  // password reset's job payload, for one.
  const jobs = async () => (await database.sql`select count(*)::int as n from pgboss.job`)[0]?.n
  const queued = await jobs()
  const reset = await app.inject({ method: 'POST', url: '/v0/password_resets', headers: json, payload: '{"email_or_username":"\\ud800"}' })
  t.equal(reset.statusCode, 400, 'a lone surrogate in a reset request is a 400')
  t.match(reset.json(), { id: 'bad_request', errors: { email_or_username: [/lone surrogate/] } })
  t.equal(await jobs(), queued, 'no job was queued')
  // Deeper than free JSON may be, yet within the body's depth: the field is named.
  const deepOne = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: { ...bearer(researcher.token), ...json }, payload: `{"meta":${deep(MAX_BODY_DEPTH - 1)}}` })
  t.match(deepOne.json(), { id: 'unprocessable_entity', errors: { meta: [/nested too deeply/] } })
  // Deeper than any body may be: refused before it is parsed.
  const deeper = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: { ...bearer(researcher.token), ...json }, payload: `{"meta":${deep(5000)}}` })
  t.equal(deeper.statusCode, 400)
  t.match(deeper.json(), { id: 'bad_request', message: /nested too deeply \(at most 72 levels\)/, errors: null, url: null })
  const atLimit = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: { ...bearer(researcher.token), ...json }, payload: `{"meta":${deep(64)}}` })
  t.equal(atLimit.statusCode, 200, '64 levels are stored')
  t.same((await state())?.meta, JSON.parse(deep(64)))
})

t.test('status messages and reports: the same check before jsonb', async (t) => {
  const parse = (text: string) => parseJsonObject(Buffer.from(text), 1024 * 1024)
  t.same(parse('{"a":"é😀"}'), { a: 'é😀' })
  t.equal(parse('{"a":"\\ud800"}'), null, 'a lone surrogate')
  t.equal(parse('{"\\udfff":1}'), null, 'a lone surrogate in a key')
  t.equal(parse('{"a":"\\u0000"}'), null, 'NUL')
  t.equal(parse(deep(5000)), null, 'nested 5,000 levels')
  t.not(parse(deep(64)), null, 'nested 64 levels')
})

t.test('a body nested 5,000 levels deep in any field of any write route is a 4xx', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const admin = await signUpAs(harness, 'admin')
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(admin.token), payload: { name: 'deep' } })
  const device = (created.json() as { id: number }).id
  const fields = ['name', 'username', 'email', 'password', 'description', 'meta', 'device_ids', 'user_tags', 'latitude', 'kit_id', 'measurement_id',
    'redirect_uri', 'email_or_username', 'postprocessing_attributes', 'data', 'starts_at', 'city', 'grant_type', 'filename']
  const routes: Array<['POST' | 'PATCH' | 'PUT', string]> = [
    ['POST', '/v0/users'], ['PATCH', '/v0/me'], ['POST', '/v0/sessions'], ['POST', '/v0/password_resets'], ['POST', '/v0/applications'],
    ['POST', '/v0/oauth/token'], ['POST', '/v0/devices'], ['PATCH', `/v0/devices/${device}`], ['POST', '/v0/experiments'], ['POST', '/v0/sensors'],
    ['POST', '/v0/measurements'], ['POST', '/v0/tags'], ['POST', '/v0/tag_sensors'], ['PATCH', '/v0/me/avatar'], ['POST', `/v0/devices/${device}/readings/csv`]
  ]
  for (const levels of [5000, 100_000]) {
    const payload = `{${fields.map((f) => `"${f}":${deepArray(levels)}`).join(',')}}`
    for (const [method, url] of routes) {
      const res = await app.inject({ method, url, headers: { ...bearer(admin.token), 'content-type': 'application/json' }, payload })
      t.ok(res.statusCode >= 400 && res.statusCode < 500, `${method} ${url}, ${levels} levels: ${res.statusCode} ${res.body.slice(0, 100)}`)
    }
  }
})

/** The port a built app listens on, on the loopback interface. */
async function listening (app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  if (typeof address !== 'object' || address === null) throw new Error('not listening')
  return address.port
}

/** A raw HTTP/1.1 exchange: `send` writes the request in its own time; resolves with all the server wrote and when it closed. */
async function rawExchange (port: number, send: (socket: net.Socket) => Promise<void>): Promise<{ text: string, closedAfterMs: number }> {
  const socket = net.connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve).once('error', reject) })
  const started = Date.now()
  let text = ''
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
  const closed = new Promise<number>((resolve) => { socket.once('close', () => { resolve(Date.now() - started) }) })
  // Writes after the server hung up fail; what it answered is what counts.
  socket.on('error', () => {})
  await send(socket).catch(() => {})
  // What arrives until the close counts: read only after it.
  const closedAfterMs = await closed
  return { text, closedAfterMs }
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('the depth scan: brackets in strings and escapes do not count, and it stops at the first level too many', async (t) => {
  const bytes = (text: string): Buffer => Buffer.from(text)
  t.notOk(nestedDeeperThan(bytes('{"a":[1,{"b":"[[[[[["}]}'), 3), 'brackets inside a string')
  t.notOk(nestedDeeperThan(bytes('["\\"[[[[", "\\\\"]'), 1), 'an escaped quote, then an escaped backslash')
  t.ok(nestedDeeperThan(bytes('[[[[]]]]'), 3))
  t.notOk(nestedDeeperThan(bytes('[[[]]]'), 3))
  t.notOk(nestedDeeperThan(bytes('"é😀[[[["'), 1), 'multi-byte characters')
  t.ok(nestedDeeperThan(bytes(deepArray(MAX_BODY_DEPTH + 1)), MAX_BODY_DEPTH))
  t.notOk(nestedDeeperThan(bytes(deepArray(MAX_BODY_DEPTH)), MAX_BODY_DEPTH))
})

t.test('a 4.8 MB body of nested [ is a 400 at a few milliseconds of CPU, and an anonymous one a 401', async (t) => {
  const harness = await buildPlatform(t, { bodyLimit: 8 * 1024 * 1024 })
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const payload = Buffer.alloc(4_800_000, '[')
  const json = { 'content-type': 'application/json' }
  // Warm the route and its hooks, so the measure below is of the body alone.
  await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: { ...bearer(owner.token), ...json }, payload: '[[]]' })
  // JSON.parse spends 1 to 2 s of CPU on this body here; the scan stops after 73 bytes. What is
  // left is inject copying 4.8 MB and the hooks, a few ms: 200 ms is far from both, so a loaded
  // machine (this process runs the server and tap's other work) does not make it flaky.
  const before = process.cpuUsage()
  const res = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: { ...bearer(owner.token), ...json }, payload })
  const used = process.cpuUsage(before)
  const cpuMs = (used.user + used.system) / 1000
  t.equal(res.statusCode, 400)
  t.match(res.json(), { id: 'bad_request', message: /nested too deeply/, errors: null, url: null })
  t.ok(cpuMs < 200, `the server spent ${cpuMs.toFixed(1)} ms of CPU on it`)

  const anonymous = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: json, payload })
  t.equal(anonymous.statusCode, 401, 'no credentials: 401 before the body is looked at')
  t.match(anonymous.json(), { id: 'unauthorized' })
  // Within the default limit, on a route open to anonymous callers: the same 400.
  const signUpDeep = await app.inject({ method: 'POST', url: '/v0/users', headers: json, payload: Buffer.alloc(60_000, '[') })
  t.equal(signUpDeep.statusCode, 400)
  t.match(signUpDeep.json(), { id: 'bad_request', message: /nested too deeply/ })
  const form = await app.inject({ method: 'POST', url: '/v0/sessions', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `username${'[a]'.repeat(5000)}=x&password=y` })
  t.ok(form.statusCode >= 400 && form.statusCode < 500, `bracketed form keys are flat keys: ${form.statusCode}`)
})

t.test('body limits per route: small by default, readings and imports large, 413 naming the limit', async (t) => {
  const large = 1024 * 1024
  const harness = await buildPlatform(t, { bodyLimit: large })
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const headers = { ...bearer(owner.token), 'content-type': 'application/json' }

  const update = await app.inject({ method: 'PATCH', url: `/v0/devices/${device}`, headers, payload: { description: 'x'.repeat(70 * 1024) } })
  t.equal(update.statusCode, 413, 'a device update over 64 KiB')
  t.match(update.json(), { id: 'payload_too_large', message: 'The body is larger than the limit of 65536 bytes', errors: null })
  const form = await app.inject({ method: 'PATCH', url: `/v0/devices/${device}`, headers: { ...bearer(owner.token), 'content-type': 'application/x-www-form-urlencoded' }, payload: `description=${'x'.repeat(70 * 1024)}` })
  t.equal(form.statusCode, 413, 'a form body too')
  t.match(form.json(), { message: /limit of 65536 bytes/ })
  // Whitespace is JSON too: 60 KiB of body that the description's own rules let through.
  const small = await app.inject({ method: 'PATCH', url: `/v0/devices/${device}`, headers, payload: `{"description":"under the limit"}${' '.repeat(60 * 1024)}` })
  t.equal(small.statusCode, 200, 'under it, the update is made')

  // About 600 KB of readings: over the default limit, within the readings' one.
  const start = Math.floor(Date.now() / 60_000) * 60_000 - 30 * 86_400_000
  const data = Array.from({ length: 8000 }, (_, i) => ({ recorded_at: new Date(start + i * 60_000).toISOString(), sensors: [{ id: 55, value: i / 10 }] }))
  const body = JSON.stringify({ data })
  t.ok(body.length > 64 * 1024 && body.length < large, `${body.length} bytes`)
  const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers, payload: body })
  t.equal(posted.statusCode, 200, 'readings take a large body')
  t.match(posted.json(), { stored: 8000 })
  const tooMany = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers, payload: JSON.stringify({ data: [...data, ...data] }) })
  t.equal(tooMany.statusCode, 413)
  t.match(tooMany.json(), { message: `The body is larger than the limit of ${large} bytes` })

  // Multipart is read by the handler past Fastify's check: its Content-Length is judged first,
  // against the upload limit (256 KiB in tests) plus the default.
  const picture = multipart({ city: 'Oslo' }, { profile_picture: { name: 'a.png', type: 'image/png', bytes: Buffer.alloc(400 * 1024) } })
  const upload = await app.inject({ method: 'PATCH', url: '/v0/me', headers: { ...bearer(owner.token), ...picture.headers }, payload: picture.payload })
  t.equal(upload.statusCode, 413)
  t.match(upload.json(), { message: `The body is larger than the limit of ${256 * 1024 + 64 * 1024} bytes` })
})

t.test('a route that needs a signed-in caller refuses an anonymous one before reading the body', async (t) => {
  const harness = await buildPlatform(t, { bodyLimit: 8 * 1024 * 1024 })
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const port = await listening(app)
  for (const [method, url] of [['POST', `/v0/devices/${device}/readings`], ['PATCH', '/v0/me'], ['POST', '/v0/experiments']] as const) {
    // Headers announce 4 MB, and only 16 bytes follow: the answer cannot wait for the body, so
    // no parser ran. (A parser would also have refused those 16 bytes as malformed JSON.)
    const { text } = await rawExchange(port, async (socket) => {
      socket.write(`${method} ${url} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 4000000\r\n\r\n{"data":[[[[[[[`)
      await sleep(300)
      socket.destroy()
    })
    t.match(text, /^HTTP\/1\.1 401 /, `${method} ${url}: 401 before the body arrived`)
    t.match(text, /"id":"unauthorized"/)
  }
  const signedIn = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: { ...bearer(owner.token), 'content-type': 'application/json' }, payload: '{"data":' })
  t.equal(signedIn.statusCode, 400, 'signed in, the body is parsed (and this one is malformed)')
  const anonymousRead = await app.inject({ method: 'GET', url: `/v0/devices/${device}` })
  t.equal(anonymousRead.statusCode, 200, 'routes open to anonymous callers stay open')
})

t.test('a request sent too slowly is a 408 and its connection is closed', async (t) => {
  const timeouts = { headersMs: 600, requestMs: 1200 }
  const { app } = await buildApi(t, { server: { timeouts } })
  const port = await listening(app)
  // Node checks the timeouts every headersMs / 4: the answer may come that much after the limit.
  const slack = 1000

  const body = JSON.stringify({ username: 'someone', password: 'a long password' })
  const slowBody = await rawExchange(port, async (socket) => {
    socket.write(`POST /v0/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
    for (const char of body) {
      if (socket.destroyed) return
      socket.write(char)
      await sleep(200)
    }
  })
  t.match(slowBody.text, /^HTTP\/1\.1 408 /, 'one byte every 200 ms: 408')
  t.match(slowBody.text, /"id":"request_timeout"/, 'in the one error shape')
  t.ok(slowBody.closedAfterMs < timeouts.requestMs + slack, `closed after ${slowBody.closedAfterMs} ms`)

  const slowHeaders = await rawExchange(port, async (socket) => {
    for (const char of 'GET /v0/ HTTP/1.1\r\nHost: localhost\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa') {
      if (socket.destroyed) return
      socket.write(char)
      await sleep(100)
    }
  })
  t.match(slowHeaders.text, /^HTTP\/1\.1 408 /, 'headers a byte at a time: 408')
  t.ok(slowHeaders.closedAfterMs < timeouts.headersMs + slack, `closed after ${slowHeaders.closedAfterMs} ms`)

  const quick = await app.inject({ method: 'GET', url: '/v0/' })
  t.equal(quick.statusCode, 200, 'an ordinary request is untouched')
})

t.test('a client still sending a body the answer refused reads the answer, then the connection closes', async (t) => {
  const harness = await buildPlatform(t, { bodyLimit: 1024 * 1024 })
  const { app, database } = harness
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const port = await listening(app)
  const auth = `Authorization: Bearer ${owner.token}\r\n`
  const chunk = Buffer.alloc(256 * 1024, ' ')
  const cases = [
    { name: 'a device update over 64 KiB', head: `PATCH /v0/devices/${device} HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 8388608\r\n`, status: 413 },
    { name: 'readings over their limit, chunked', head: `POST /v0/devices/${device}/readings HTTP/1.1\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n`, status: 413, chunked: true },
    { name: 'readings from an anonymous caller', head: `POST /v0/devices/${device}/readings HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 8388608\r\n`, status: 401 },
    { name: 'a multipart upload over the limit', head: `PATCH /v0/me HTTP/1.1\r\n${auth}Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 8388608\r\n`, status: 413 },
    { name: 'after Expect: 100-continue', head: `PATCH /v0/devices/${device} HTTP/1.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 8388608\r\nExpect: 100-continue\r\n`, status: 413 }
  ]
  for (const c of cases) {
    // Several times: without the lingering close, whether the answer survived the reset was a race.
    for (let round = 0; round < 4; round++) {
      const { text, closedAfterMs } = await rawExchange(port, async (socket) => {
        socket.write(`${c.head}Host: localhost\r\n\r\n`)
        // As curl and firmware do: the body is sent as fast as the socket takes it, answer or
        // not, and the answer read once it is sent. A reset from the server would drop it.
        socket.pause()
        for (let sent = 0; sent < 8 * 1024 * 1024 && !socket.destroyed; sent += chunk.length) {
          const more = socket.write(c.chunked === true ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk)
          if (!more) await new Promise((resolve) => { socket.once('drain', resolve).once('close', resolve) })
        }
        socket.end(c.chunked === true ? '0\r\n\r\n' : '')
        socket.resume()
      })
      const answer = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '')
      t.match(answer, new RegExp(`^HTTP/1\\.1 ${c.status} `), `${c.name} (round ${round + 1}): ${c.status} read by the client`)
      t.match(answer, /\r\nconnection: close\r\n/i, `${c.name}: the connection closes after it`)
      t.match(answer, /"errors":null,"url":null\}$/, `${c.name}: the whole answer, in the error shape`)
      t.ok(closedAfterMs < LINGER_MS + 3000, `${c.name}: closed ${closedAfterMs} ms after it opened`)
    }
  }
  const after = await app.inject({ method: 'GET', url: `/v0/devices/${device}` })
  t.equal(after.statusCode, 200, 'the server answers as before')
})
