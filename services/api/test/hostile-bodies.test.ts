import t from 'tap'
import { parseJsonObject } from '@esp/domain'
import { bearer, buildApi, signUp, signUpAs } from '../../../test/helpers/api.js'

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
  const deepOne = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: { ...bearer(researcher.token), ...json }, payload: `{"meta":${deep(5000)}}` })
  t.match(deepOne.json(), { id: 'unprocessable_entity', errors: { meta: [/nested too deeply/] } })
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
