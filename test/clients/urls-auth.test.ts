import t from 'tap'
import { addDevice, call, mailbox, postReadings, signUp, signUpAs, startPlatform, until, WEB_ORIGIN } from './platform.js'
import { runPython } from './python.js'
import { rawHttp } from './raw.js'

/**
 * clients.md §4 rules 1–10: URLs, parameters, encoding and authentication, as the web (AngularJS,
 * Restangular) and the Python connector (requests, aiohttp) send them. Requests the clients build
 * by pasting strings together go out as raw bytes (rawHttp), so nothing normalises them first.
 */
const platform = await startPlatform(t)
const { base, httpPort } = platform
const owner = await signUp(platform)
const device = await addDevice(platform, owner, { name: 'Balcony Air' })
// Sensor 55 (temperature): the connector's test day, and six minutes of one reading a minute.
const minutes = [0, 1, 2, 3, 4, 5].map((m) => ({ recorded_at: `2024-01-30T00:0${m}:00Z`, sensors: [{ id: 55, value: 20 + m }] }))
const stored = await postReadings(platform, owner, device.id, [...minutes, { recorded_at: '2015-07-28T12:00:00Z', sensors: [{ id: 55, value: 15 }] }])
if (stored.status !== 200 && stored.status !== 201) throw new Error(`readings: ${stored.status} ${stored.text}`)

interface History { readings: Array<[string, number | null]>, from: string, to: string, function: string, rollup: string }
const history = (body: unknown): History => body as History

t.test('rule 1: collection and member paths answer with a trailing slash, and PATCH /devices/<id>/ (C4) works', async (t) => {
  const collections = ['/v0/devices/', '/v0/sensors/', '/v0/users/', '/v0/experiments/', '/v0/measurements/', '/v0/devices/?q[name_cont]=Balcony']
  for (const path of collections) {
    const res = await rawHttp(httpPort, 'GET', path)
    t.equal(res.status, 200, `GET ${path}`)
    t.ok(Array.isArray(res.json), `GET ${path} is a list`)
  }
  for (const path of [`/v0/devices/${device.id}/`, `/v0/users/${owner.id}/`, '/v0/sensors/55/', '/v0/measurements/7/']) {
    const res = await rawHttp(httpPort, 'GET', path)
    t.equal(res.status, 200, `GET ${path}`)
  }
  // The connector's own URLs (config.py), through requests.
  const listed = await runPython<{ items: Array<{ id: number }>, errors: unknown[] }>('connector.py', { cmd: 'list', url: `${base}/devices/`, model: 'Device' })
  t.ok(listed.items.some((i) => i.id === device.id), 'the connector lists devices/ and finds the device')
  t.same(listed.errors, [], 'every device of devices/ validates as the connector\'s Device')

  // patch_postprocessing: a researcher's own device, PATCH devices/<id>/ with every unset field null.
  const researcher = await signUpAs(platform, 'researcher')
  const kit = await addDevice(platform, researcher)
  const patched = await runPython<{ status: number, body: { postprocessing: { meta: string } | null } }>('connector.py', {
    cmd: 'patch_postprocessing',
    base: `${base}/`,
    device_id: kit.id,
    attributes: { blueprint_url: 'https://example.org/blueprints/sck_21.json', meta: '{"note":"conformance"}' }
  }, { SC_BEARER: researcher.token })
  t.ok(patched.status === 200 || patched.status === 201, `PATCH devices/${kit.id}/ answers 200 or 201 (got ${patched.status})`)
  t.equal(patched.body.postprocessing?.meta, '{"note":"conformance"}', 'the postprocessing attributes were taken')
})

t.test('rule 2: a doubled slash inside the path (Restangular one(\'/me\')) is tolerated', async (t) => {
  const me = await rawHttp(httpPort, 'GET', '/v0//me', { headers: { authorization: `Bearer ${owner.token}` } })
  t.equal(me.status, 200, 'GET /v0//me')
  t.match(me.json, { id: owner.id, username: owner.username })
  const put = await rawHttp(httpPort, 'PUT', '/v0//me', {
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ username: owner.username, email: `${owner.username}@example.org`, city: 'Barcelona', country: 'Spain', country_code: 'ES', url: 'https://example.org' })
  })
  t.equal(put.status, 200, 'PUT /v0//me')
  const device2 = await rawHttp(httpPort, 'GET', `/v0//devices/${device.id}`)
  t.equal(device2.status, 200, 'GET /v0//devices/:id')
})

t.test('rule 3: unescaped [ and ] in query keys, as the connector pastes q[...] filters', async (t) => {
  const cont = await rawHttp(httpPort, 'GET', '/v0/devices/?q[name_cont]=Balcony')
  t.equal(cont.status, 200)
  t.ok((cont.json as Array<{ id: number }>).some((d) => d.id === device.id), 'q[name_cont] filters')
  const byName = await rawHttp(httpPort, 'GET', '/v0/devices/?q[name_eq]=Balcony%20Air')
  t.same((byName.json as Array<{ id: number }>).map((d) => d.id), [device.id], 'q[name_eq] with a space (%20)')
  const user = await rawHttp(httpPort, 'GET', `/v0/users/?q[username_eq]=${owner.username}`)
  t.same((user.json as Array<{ id: number }>).map((u) => u.id), [owner.id], 'q[username_eq]')
  const owned = await rawHttp(httpPort, 'GET', `/v0/devices/?q[owner_id_eq]=${owner.id}`)
  t.same((owned.json as Array<{ id: number }>).map((d) => d.id), [device.id], 'q[owner_id_eq]')
  for (const query of ['q[created_at_gt]=2023-08-11', 'q[postprocessing_id_not_null]=1', 'q[tags_name_in]=TwinAIR', 'q[name_cont]=air&q[owner_id_eq]=1']) {
    const res = await rawHttp(httpPort, 'GET', `/v0/devices/?${query}`)
    t.equal(res.status, 200, query)
    t.ok(Array.isArray(res.json), `${query}: a list`)
  }
  const sensors = await rawHttp(httpPort, 'GET', '/v0/sensors/?q[name_cont]=Temperature')
  t.equal(sensors.status, 200, 'sensors q[name_cont]')
  // requests escapes the brackets itself (%5B, %5D): the same filter.
  const viaRequests = await runPython<{ status: number, sent: string, body: Array<{ id: number }> }>('connector.py', { cmd: 'search', url: `${base}/devices/?q[name_eq]=Balcony Air` })
  t.equal(viaRequests.status, 200, `requests sent ${viaRequests.sent}`)
  t.same(viaRequests.body.map((d) => d.id), [device.id])
})

t.test('rule 4: from and to as ISO with milliseconds, the pandas form (+ arriving as a space), a date, and epoch seconds', async (t) => {
  const forms: Array<[string, string, string]> = [
    ['web: ISO with milliseconds', '2024-01-30T00:00:00.000Z', '2024-01-30T00:10:00.000Z'],
    ['pandas, space as %20 and a raw + (requests)', '2024-01-30%2000:00:00+00:00', '2024-01-30%2000:10:00+00:00'],
    ['pandas, space and + both as + (aiohttp)', '2024-01-30+00:00:00+00:00', '2024-01-30+00:10:00+00:00'],
    ['pandas, encoded', '2024-01-30%2000:00:00%2B00:00', '2024-01-30%2000:10:00%2B00:00'],
    ['date only', '2024-01-30', '2024-01-31'],
    ['epoch seconds', '1706572800', '1706573400']
  ]
  for (const [label, from, to] of forms) {
    const res = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?sensor_id=55&rollup=1m&from=${from}&to=${to}`)
    t.equal(res.status, 200, `${label}: 200`)
    const body = history(res.json)
    t.equal(body.from, '2024-01-30T00:00:00Z', `${label}: from read as 2024-01-30T00:00:00Z`)
    t.ok(body.readings.some(([at, value]) => at === '2024-01-30T00:00:00Z' && value === 20), `${label}: the first reading is in the answer`)
  }
  // The connector itself, through aiohttp, with the pandas string form.
  const [datum] = await runPython<Array<{ status: number, sent: string, readings: Array<[string, number]> | null }>>('connector.py', {
    cmd: 'readings', base, device_id: device.id, sensor_ids: [55], rollup: '1m', min_date: '2024-01-30 00:00:00+00:00', max_date: '2024-01-30 00:10:00+00:00'
  })
  t.equal(datum?.status, 200, `aiohttp sent ${datum?.sent}`)
  t.equal(datum?.readings?.length, 6, 'six minutes of readings')
  for (const bad of ['yesterday', '2024-13-45', '99999999999999999999']) {
    const res = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?sensor_id=55&rollup=1m&from=${bad}`)
    t.ok(res.status >= 400 && res.status < 500, `from=${bad}: a 4xx, never a 5xx (got ${res.status})`)
    t.match(res.json, { id: String }, `from=${bad}: a JSON error`)
  }
})

t.test('rule 5: rollup <int>s including 0s, 1m … 1y, and the literal None (a 4xx JSON error, never a 5xx)', async (t) => {
  const range = 'from=2024-01-30T00:00:00.000Z&to=2024-01-30T00:10:00.000Z'
  for (const rollup of ['0s', '1s', '30s', '630s', '1m', '10m', '1h', '1d', '1w', '1M', '1y']) {
    const res = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?sensor_id=55&rollup=${rollup}&${range}`)
    t.equal(res.status, 200, `rollup=${rollup}`)
    t.ok(history(res.json).readings.length > 0, `rollup=${rollup}: readings`)
  }
  for (const rollup of ['None', 'abc', '1x', '-1m', '1.5h', '']) {
    const res = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?sensor_id=55&rollup=${rollup}&${range}`)
    t.ok(res.status >= 400 && res.status < 500, `rollup=${rollup}: a 4xx (got ${res.status})`)
    t.match(res.json, { id: String, message: String }, `rollup=${rollup}: a JSON error`)
  }
})

t.test('rule 6: all_intervals=true (web), limit and function=avg (connector); without function the default is avg', async (t) => {
  const range = 'from=2024-01-30T00:00:00.000Z&to=2024-01-30T00:09:59.000Z'
  const web = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?${range}&rollup=60s&sensor_id=55&all_intervals=true`)
  t.equal(web.status, 200, 'the web\'s request')
  const all = history(web.json)
  t.equal(all.function, 'avg', 'the default function is avg')
  t.equal(all.readings.length, 10, 'ten minute buckets')
  t.equal(all.readings.filter(([, v]) => v === null).length, 4, 'empty buckets are null')
  const conn = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?${range}&limit=1000&rollup=1m&sensor_id=55&function=avg`)
  t.equal(conn.status, 200, 'the connector\'s request')
  const none = await rawHttp(httpPort, 'GET', `/v0/devices/${device.id}/readings?${range}&rollup=1m&sensor_id=55`)
  t.same(history(none.json).readings, history(conn.json).readings, 'without function: the same values as function=avg')
})

t.test('rule 6 (C2): rollup=1m from 2001-01-01 00:00:00+00:00 answers the buckets that hold data over more than 50,000 minutes of history', async (t) => {
  const kit = await addDevice(platform, owner, { name: 'Long history' })
  // Two readings 59 days apart: 84,960 minutes of history between them.
  const posted = await postReadings(platform, owner, kit.id, [
    { recorded_at: '2025-01-01T00:00:00Z', sensors: [{ id: 55, value: 1 }] },
    { recorded_at: '2025-03-01T00:00:30Z', sensors: [{ id: 55, value: 2 }] }
  ])
  t.equal(posted.status, 200)
  for (const from of ['2001-01-01+00:00:00+00:00', '2001-01-01%2000:00:00+00:00']) {
    const res = await rawHttp(httpPort, 'GET', `/v0/devices/${kit.id}/readings?from=${from}&rollup=1m&sensor_id=55&function=avg`)
    t.equal(res.status, 200, `from=${from}: 200 (got ${res.status}: ${res.body.slice(0, 200)})`)
    if (res.status !== 200) continue
    t.same([...history(res.json).readings].sort(), [['2025-01-01T00:00:00Z', 1], ['2025-03-01T00:00:00Z', 2]], 'the two buckets that hold data')
  }
  const [datum] = await runPython<Array<{ status: number, readings: unknown[] | null }>>('connector.py', { cmd: 'readings', base, device_id: kit.id, sensor_ids: [55], rollup: '1m', min_date: '2001-01-01 00:00:00+00:00' })
  t.equal(datum?.status, 200, 'the connector\'s get_data with its default min_date')
  t.equal(datum?.readings?.length, 2)
})

t.test('rule 6 (C2): limit=N aggregates the oldest N stored readings in range (KairosDB)', async (t) => {
  const kit = await addDevice(platform, owner, { name: 'Limited' })
  const times = ['10:00:00', '10:00:30', '10:01:00', '10:01:30', '10:02:00']
  const posted = await postReadings(platform, owner, kit.id, times.map((at, i) => ({ recorded_at: `2025-05-05T${at}Z`, sensors: [{ id: 55, value: i + 1 }] })))
  t.equal(posted.status, 200)
  const res = await rawHttp(httpPort, 'GET', `/v0/devices/${kit.id}/readings?from=2025-05-05%2000:00:00+00:00&to=2025-05-06%2000:00:00+00:00&limit=3&rollup=1m&sensor_id=55&function=avg`)
  t.equal(res.status, 200)
  t.same([...history(res.json).readings].sort(), [['2025-05-05T10:00:00Z', 1.5], ['2025-05-05T10:01:00Z', 3]], 'the oldest three readings, in their buckets')
})

t.test('rule 7: paths beyond the spec: /experiments/:id, fresh_world_map, /tags?per_page=200, PUT /me, GET /password_resets/:code', async (t) => {
  const experiment = await call(`${base}/experiments`, { method: 'POST', token: owner.token, json: { name: 'Noise walk', description: 'conformance', device_ids: [device.id] } })
  t.equal(experiment.status, 201, `POST /experiments (${experiment.text.slice(0, 200)})`)
  const id = (experiment.json as { id: number }).id
  const plural = await runPython<{ status: number, valid: boolean, errors?: unknown }>('connector.py', { cmd: 'get', url: `${base}/experiments/${id}`, model: 'Experiment' })
  t.equal(plural.status, 200, 'GET /v0/experiments/:id (plural)')
  t.ok(plural.valid, `it validates as the connector's Experiment (is_test a bool): ${JSON.stringify(plural.errors ?? [])}`)

  for (const token of [undefined, owner.token]) {
    const fresh = await call(`${base}/devices/fresh_world_map`, token === undefined ? {} : { token })
    t.equal(fresh.status, 200, `fresh_world_map ${token === undefined ? 'anonymous' : 'signed in'}`)
    t.ok(Array.isArray(fresh.json))
  }

  const admin = await signUpAs(platform, 'admin')
  t.equal((await call(`${base}/tags`, { method: 'POST', token: admin.token, json: { name: 'Conformance' } })).status, 201)
  const tags = await call(`${base}/tags?per_page=200`)
  t.equal(tags.status, 200)
  t.ok((tags.json as Array<{ id: number, name: string }>).some((tag) => tag.name === 'Conformance' && typeof tag.id === 'number'), 'items carry name and id')

  const user = await signUp(platform)
  const put = await call(`${base}/me`, { method: 'PUT', token: user.token, json: { username: user.username, email: `${user.username}@example.org`, city: 'Girona', country: 'Spain', country_code: null, url: '' } })
  t.equal(put.status, 200, 'PUT /me')
  t.match(put.json, { username: user.username, location: { city: 'Girona' } })

  const asked = await call(`${base}/password_resets`, { method: 'POST', json: { email_or_username: user.username } })
  t.equal(asked.status, 200)
  let code = ''
  await until(async () => {
    const mail = (await mailbox(platform)).find((m) => m.to === `${user.username}@example.org`)
    code = /password_resets\/([\w-]+)/.exec(mail?.text ?? '')?.[1] ?? ''
    return code !== ''
  }, 20_000, 'the reset mail')
  const shown = await call(`${base}/password_resets/${code}`)
  t.equal(shown.status, 200, 'GET /password_resets/:code with a valid code')
  const wrong = await call(`${base}/password_resets/not-a-code`)
  t.ok(wrong.status >= 400 && wrong.status < 500, 'a wrong code is an error ("Wrong url")')
  t.match(wrong.json, { id: String })
})

t.test('rule 8: Authorization: Bearer is the main form; anonymous GETs work for every public resource', async (t) => {
  const me = await call(`${base}/me`, { token: owner.token })
  t.equal(me.status, 200)
  t.equal((me.json as { id: number }).id, owner.id)
  const experiment = await call(`${base}/experiments`, { method: 'POST', token: owner.token, json: { name: 'Public', device_ids: [device.id] } })
  const experimentId = (experiment.json as { id: number }).id
  const publicPaths = [
    '/v0/', '/v0/devices', `/v0/devices/${device.id}`, '/v0/devices/world_map', '/v0/devices/fresh_world_map',
    `/v0/devices/${device.id}/readings?sensor_id=55&rollup=1h&from=2024-01-30&to=2024-01-31`,
    '/v0/users', `/v0/users/${owner.id}`, `/v0/users/${owner.username}`, '/v0/sensors', '/v0/sensors/55',
    '/v0/measurements', '/v0/measurements/7', '/v0/kits', '/v0/kits/26', '/v0/tags', '/v0/search?q=Balcony',
    '/v0/experiments', `/v0/experiments/${experimentId}`
  ]
  for (const path of publicPaths) {
    const res = await call(`${platform.origin}${path}`)
    t.equal(res.status, 200, `anonymous GET ${path}`)
  }
})

t.test('rule 9: POST /sessions with a JSON body gives access_token; a failed login is JSON with a truthy id', async (t) => {
  const ok = await call(`${base}/sessions`, { method: 'POST', json: { username: owner.username, password: owner.password } })
  t.equal(ok.status, 200)
  t.type((ok.json as { access_token: unknown }).access_token, 'string')
  for (const [label, body] of [['a wrong password', { username: owner.username, password: 'wrong password' }], ['an unknown user', { username: 'nobody-at-all', password: 'wrong password' }]] as const) {
    const failed = await call(`${base}/sessions`, { method: 'POST', json: body })
    t.ok(failed.status === 422 || failed.status === 404 || failed.status === 401, `${label}: ${failed.status}`)
    t.ok(Boolean((failed.json as { id?: unknown } | undefined)?.id), `${label}: the body has a truthy id ("incorrect")`)
  }
})

t.test('rule 10: the current web: credentialed CORS for its origin and a non-empty legacy_api_key', async (t) => {
  const preflight = await call(`${base}/me`, { method: 'OPTIONS', headers: { origin: WEB_ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' } })
  t.ok(preflight.status === 204 || preflight.status === 200, 'the preflight passes')
  t.equal(preflight.headers.get('access-control-allow-origin'), WEB_ORIGIN)
  t.equal(preflight.headers.get('access-control-allow-credentials'), 'true')
  const me = await call(`${base}/me`, { token: owner.token, headers: { origin: WEB_ORIGIN } })
  t.equal(me.headers.get('access-control-allow-origin'), WEB_ORIGIN)
  t.equal(me.headers.get('access-control-allow-credentials'), 'true')
  const key = (me.json as { legacy_api_key?: unknown }).legacy_api_key
  t.ok(typeof key === 'string' && key !== '' && key !== '[FILTERED]', 'isAuth: /me has a non-empty legacy_api_key')
})

t.test('rule 10: the current web: /me answers from the session cookie alone (withCredentials, no token)', async (t) => {
  const login = await fetch(`${base}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json', origin: WEB_ORIGIN }, body: JSON.stringify({ username: owner.username, password: owner.password }) })
  t.equal(login.status, 200)
  const cookies = login.headers.getSetCookie().map((c) => c.split(';')[0] ?? '').filter((c) => c !== '')
  t.ok(cookies.length > 0, 'signing in sets cookies')
  const me = await call(`${base}/me`, { headers: { origin: WEB_ORIGIN, cookie: cookies.join('; ') } })
  t.equal(me.status, 200, `GET /me with the cookies and no Authorization (got ${me.status}: ${me.text.slice(0, 120)})`)
  t.equal(me.headers.get('access-control-allow-credentials'), 'true')
  t.match(me.json, { id: owner.id, legacy_api_key: String })
})
