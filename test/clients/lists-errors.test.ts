import t from 'tap'
import { addDevice, call, callFrom, mailbox, postReadings, signUp, startPlatform, until } from './platform.js'
import { runPython } from './python.js'
import { rawHttp } from './raw.js'

/**
 * clients.md §4 rules 11–18 (lists, status codes, error bodies) and 36 (the load the clients
 * make, against the default rate limit). Lists are read as the connector reads them: its Link
 * parser splits the header on commas and follows `next` until it is gone or repeats.
 */
const platform = await startPlatform(t)
const { base, httpPort } = platform
const owner = await signUp(platform)
const other = await signUp(platform)
// Three devices near Barcelona whose names hold a comma, and one far away.
const north = await addDevice(platform, owner, { name: 'Balcony, north', latitude: 41.3901, longitude: 2.1701 })
const south = await addDevice(platform, owner, { name: 'Balcony, south', latitude: 41.3902, longitude: 2.1702 })
const east = await addDevice(platform, other, { name: 'Balcony, east', latitude: 41.3903, longitude: 2.1703 })
await addDevice(platform, other, { name: 'Faraway', latitude: -33.86, longitude: 151.2 })

interface Link { url: string, rel: string }
/** The Link header read the way conn tools.process_headers reads it. */
function connectorLinks (header: string | null): Record<string, string> {
  const result: Record<string, string> = {}
  for (const item of (header ?? '').split(',')) {
    if (item.trim() === '') continue
    const chunk = item.replace(/ /g, '').split(';')
    if ((chunk[1] ?? '').includes('rel')) result[(chunk[1] ?? '').replace(/"/g, '').split('=')[1] ?? ''] = (chunk[0] ?? '').replace(/^</, '').replace(/>$/, '')
  }
  return result
}
/** The same header read by the RFC 8288 grammar, to compare with. */
function links (header: string | null): Link[] {
  return [...(header ?? '').matchAll(/<([^>]*)>\s*;\s*rel="([^"]+)"/g)].map(([, url = '', rel = '']) => ({ url, rel }))
}

t.test('rule 11: Link header has no raw commas, keeps the filters, and leaves next off on the last page', async (t) => {
  const start = `${base}/devices?near=41.39,2.17&within=5&q[name_cont]=y,%20&per_page=1`
  let url = start
  const seen: number[] = []
  for (let page = 1; page <= 10; page++) {
    const res = await call(url)
    t.equal(res.status, 200, `page ${page}`)
    const header = res.headers.get('link')
    const parsed = links(header)
    t.ok(parsed.length > 0, `page ${page}: a Link header`)
    for (const link of parsed) {
      t.notOk(link.url.includes(','), `page ${page}: rel=${link.rel} URL has no raw comma: ${link.url}`)
      t.ok(link.url.startsWith('http://'), `page ${page}: rel=${link.rel} URL is absolute`)
      const query = new URL(link.url).searchParams
      t.equal(query.get('near'), '41.39,2.17', `page ${page}: rel=${link.rel} keeps near`)
      t.equal(query.get('q[name_cont]'), 'y, ', `page ${page}: rel=${link.rel} keeps q[name_cont]`)
      t.equal(query.get('within'), '5', `page ${page}: rel=${link.rel} keeps within`)
    }
    t.same(links(header).map((l) => [l.rel, l.url]).sort(), Object.entries(connectorLinks(header)).sort(), `page ${page}: the connector's parser reads the same links`)
    t.equal(res.headers.get('total'), '3', `page ${page}: Total`)
    t.equal(res.headers.get('per-page'), '1', `page ${page}: Per-Page`)
    seen.push(...(res.json as Array<{ id: number }>).map((d) => d.id))
    const next = connectorLinks(header).next
    if (next === undefined) break
    t.not(next, url, 'next never repeats the current page')
    url = next
  }
  t.same(seen.sort((a, b) => a - b), [north.id, south.id, east.id], 'following next visits every match once, then next is gone')

  // The connector itself, from a filtered URL as search_by_query builds it, and get_sensors().
  const filtered = await runPython<{ pages: string[], items: Array<{ id: number }>, totals: string[] }>('connector.py', { cmd: 'list', url: `${base}/devices/?q[name_cont]=Balcony,&per_page=1`, model: 'Device' })
  t.same(filtered.items.map((i) => i.id).sort((a, b) => a - b), [north.id, south.id, east.id], 'the connector\'s loop ends after the last page')
  const sensors = await runPython<{ pages: string[], items: Array<{ id: number }>, totals: string[], errors: unknown[] }>('connector.py', { cmd: 'list', url: `${base}/sensors/`, model: 'Sensor' })
  t.equal(sensors.items.length, Number(sensors.totals[0]), `get_sensors() reads all ${sensors.totals[0]} sensors over ${sensors.pages.length} pages`)
  t.equal(new Set(sensors.items.map((i) => i.id)).size, sensors.items.length, 'no sensor twice')
  t.same(sensors.errors, [], 'every sensor validates as the connector\'s Sensor')
})

t.test('rule 12: lists default to ascending id; /sensors/ starts with 3 DHT22', async (t) => {
  const sensors = await call(`${base}/sensors/`)
  const first = (sensors.json as Array<{ id: number, name: string }>)[0]
  t.match(first, { id: 3, name: 'DHT22' }, 'the connector\'s test_sensor')
  for (const path of ['/sensors/?per_page=1000', '/measurements/?per_page=1000', '/devices/', '/users/', '/kits/']) {
    const ids = ((await call(`${base}${path}`)).json as Array<{ id: number }>).map((i) => i.id)
    t.same(ids, [...ids].sort((a, b) => a - b), `${path} ascends by id`)
  }
})

t.test('rule 12: /measurements/ starts with 7 battery', { todo: 'cannot hold with this catalogue: measurements 1-6 exist (sensor 55 is measurement 1); the reference listed them in heap order, not by id, which put 7 first (packages/db/src/seed/catalogue-data.ts notes)' }, async (t) => {
  const measurements = await runPython<{ items: Array<{ id: number, name: string }> }>('connector.py', { cmd: 'list', url: `${base}/measurements/`, model: 'Measurement' })
  t.match(measurements.items[0], { id: 7, name: 'battery' }, 'the connector\'s test_measurement')
})

t.test('rule 13: per_page=1000 for sensors and measurements, 200 for tags and 100 for near: one page holds everything', async (t) => {
  for (const path of ['/sensors?per_page=1000', '/measurements?per_page=1000', '/tags?per_page=200', '/devices?near=41.39,2.17&per_page=100']) {
    const res = await call(`${base}${path}`)
    t.equal(res.status, 200, path)
    t.equal((res.json as unknown[]).length, Number(res.headers.get('total')), `${path}: every item on one page`)
    t.notOk(connectorLinks(res.headers.get('link')).next, `${path}: no next page`)
  }
})

t.test('rule 14: world_map, fresh_world_map, search and every list are top-level JSON arrays', async (t) => {
  for (const path of ['/devices/world_map', '/devices/fresh_world_map', '/search?q=Balcony', '/search?q=zzzzzz', '/devices', '/users', '/sensors', '/measurements', '/tags', '/kits', '/experiments', '/tag_sensors', '/devices?q[name_eq]=nothing']) {
    const res = await call(`${base}${path}`, { token: owner.token })
    t.equal(res.status, 200, path)
    t.ok(Array.isArray(res.json), `${path}: a top-level array`)
  }
})

t.test('rule 15: a filter key the caller may not use (q[device_token_eq]) is a 4xx', async (t) => {
  for (const [label, token] of [['anonymous', undefined], ['a citizen', owner.token]] as const) {
    for (const key of ['device_token_eq', 'mac_address_eq']) {
      const res = await rawHttp(httpPort, 'GET', `/v0/devices/?q[${key}]=abcdef`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })
      t.ok(res.status >= 400 && res.status < 500, `${label}, q[${key}]: ${res.status}`)
      t.match(res.json, { id: String, message: String }, `${label}, q[${key}]: a JSON error`)
    }
  }
  const viaConnector = await runPython<{ status: number }>('connector.py', { cmd: 'search', url: `${base}/devices/?q[device_token_eq]=${north.token}` })
  t.ok(viaConnector.status >= 400, `the connector's test_search: an HTTP error (${viaConnector.status})`)
})

t.test('rule 16: POST readings answers 200 or 201; POST /devices 201 with id; an unknown device is 404', async (t) => {
  const posted = await postReadings(platform, owner, north.id, [{ recorded_at: '2026-03-01T22:14:00Z', sensors: [{ id: 55, value: 17.92 }] }])
  t.ok(posted.status === 200 || posted.status === 201, `POST /devices/:id/readings: ${posted.status}`)
  const viaConnector = await runPython<{ statuses: number[] }>('connector.py', { cmd: 'post', base, device_id: north.id, sensor_id: 56, points: [['2026-03-01T22:14:00Z', 71.3]] }, { SC_BEARER: owner.token })
  t.ok(viaConnector.statuses.every((s) => s === 200 || s === 201), `the connector's post_datum: ${viaConnector.statuses.join(', ')}`)
  const created = await call(`${base}/devices`, { method: 'POST', token: owner.token, json: { name: 'New kit', exposure: 'indoor', latitude: 41.4, longitude: 2.2 } })
  t.equal(created.status, 201)
  t.type((created.json as { id: unknown }).id, 'number', 'the clients read id')
  const missing = await call(`${base}/devices/999999999`)
  t.equal(missing.status, 404, 'an unknown id')
  t.match(missing.json, { id: String })
})

t.test('rule 16: someone else\'s private device is 403', { todo: 'cannot hold by design: a private device answers others exactly as a missing id (404), so that no answer confirms it exists (commit bbbf6ba, "Private devices answer 404 to others on every route"); the web then shows its 404 page instead of "private device"' }, async (t) => {
  const hidden = await addDevice(platform, owner, { name: 'Hidden', is_private: true })
  const res = await call(`${base}/devices/${hidden.id}`, { token: other.token })
  t.equal(res.status, 403)
})

t.test('rule 16: a private device answers others as a missing id does, and its owner with the device', async (t) => {
  const hidden = await addDevice(platform, owner, { name: 'Hidden too', is_private: true })
  const res = await call(`${base}/devices/${hidden.id}`, { token: other.token })
  const missing = await call(`${base}/devices/999999998`, { token: other.token })
  t.equal(res.status, missing.status, `the same status as a missing id (${res.status})`)
  t.equal((res.json as { id: string }).id, (missing.json as { id: string }).id, 'and the same error id')
  t.equal((await call(`${base}/devices/${hidden.id}`, { token: owner.token })).status, 200)
})

t.test('rule 16 (W23): DELETE /devices/:id answers 200 with an empty body; the device is gone from reads', async (t) => {
  const doomed = await addDevice(platform, owner, { name: 'Doomed' })
  const res = await fetch(`${base}/devices/${doomed.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${owner.token}` } })
  t.equal(res.status, 200, 'a 2xx: the web counts it a success')
  t.equal(await res.text(), '', 'an empty body')
  t.equal((await call(`${base}/devices/${doomed.id}`)).status, 404, 'then GET /devices/:id is a 404')
  t.notOk(((await call(`${base}/devices?per_page=1000`)).json as Array<{ id: number }>).some((d) => d.id === doomed.id), 'and it is not listed')
})

t.test('rule 17: error bodies are JSON {id, message, url, errors}; validation errors map each field to an array of messages', async (t) => {
  const isShape = (label: string, body: unknown): void => {
    t.match(body, { id: String, message: String }, `${label}: id and message`)
    t.ok(body !== null && typeof body === 'object' && 'url' in body && 'errors' in body, `${label}: url and errors keys`)
  }
  const fieldErrors = (label: string, body: unknown, field: string): void => {
    isShape(label, body)
    const messages = (body as { errors?: Record<string, unknown> }).errors?.[field]
    t.ok(Array.isArray(messages) && messages.length > 0 && messages.every((m) => typeof m === 'string'), `${label}: errors.${field} is an array of messages (${JSON.stringify((body as { errors?: unknown }).errors)})`)
  }
  // W13: signup with a taken username, then with a bad e-mail.
  const taken = await call(`${base}/users`, { method: 'POST', json: { username: owner.username, password: 'a long password', email: 'someone.new@example.org', conditions: true } })
  t.equal(taken.status, 422, 'POST /users, a taken username')
  fieldErrors('POST /users', taken.json, 'username')
  const badEmail = await call(`${base}/users`, { method: 'POST', json: { username: 'someone-new', password: 'a long password', email: 'not-an-email', conditions: true } })
  t.equal(badEmail.status, 422, 'POST /users, a bad e-mail')
  fieldErrors('POST /users', badEmail.json, 'email')
  // W14: PUT /me with someone else's username.
  const me = await call(`${base}/me`, { method: 'PUT', token: owner.token, json: { username: other.username, email: `${owner.username}@example.org` } })
  t.equal(me.status, 422, 'PUT /me')
  fieldErrors('PUT /me', me.json, 'username')
  // W21, W22: devices.
  const create = await call(`${base}/devices`, { method: 'POST', token: owner.token, json: { name: 'x', exposure: 'sideways', latitude: 41.4, longitude: 2.2 } })
  t.ok(create.status === 422 || create.status === 400, `POST /devices: ${create.status}`)
  fieldErrors('POST /devices', create.json, 'exposure')
  const patch = await call(`${base}/devices/${north.id}`, { method: 'PATCH', token: owner.token, json: { exposure: 'sideways' } })
  t.ok(patch.status === 422 || patch.status === 400, `PATCH /devices/:id: ${patch.status}`)
  fieldErrors('PATCH /devices/:id', patch.json, 'exposure')
  // W20: a password too short at the end of a reset.
  await call(`${base}/password_resets`, { method: 'POST', json: { email_or_username: other.username } })
  let code = ''
  await until(async () => {
    code = /password_resets\/([\w-]+)/.exec((await mailbox(platform)).find((m) => m.to === `${other.username}@example.org`)?.text ?? '')?.[1] ?? ''
    return code !== ''
  }, 20_000, 'the reset mail')
  const reset = await call(`${base}/password_resets/${code}`, { method: 'PATCH', json: { password: 'short' } })
  t.equal(reset.status, 422, 'PATCH /password_resets/:code')
  fieldErrors('PATCH /password_resets/:code', reset.json, 'password')

  // And every other failure: JSON, never HTML or text.
  const failures: Array<[string, () => Promise<{ status: number, json: unknown, contentType: string | null }>]> = [
    ['an unknown route', async () => await asAnswer(call(`${base}/no/such/route`))],
    ['a bad token', async () => await asAnswer(call(`${base}/me`, { token: 'not-a-token' }))],
    ['no token', async () => await asAnswer(call(`${base}/me`))],
    ['malformed JSON', async () => await asAnswer(call(`${base}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"username":' }))],
    ['an unknown sensor', async () => await asAnswer(call(`${base}/devices/${north.id}/readings?sensor_id=999999&rollup=1h`))],
    ['a bad rollup', async () => await asAnswer(call(`${base}/devices/${north.id}/readings?sensor_id=55&rollup=None`))],
    ['someone else\'s device', async () => await asAnswer(call(`${base}/devices/${east.id}`, { method: 'PATCH', token: owner.token, json: { name: 'mine' } }))],
    ['a raw request with a bad path', async () => { const r = await rawHttp(httpPort, 'GET', '/v0/devices/%zz'); return { status: r.status, json: r.json, contentType: r.headers['content-type'] ?? null } }]
  ]
  for (const [label, make] of failures) {
    const res = await make()
    t.ok(res.status >= 400, `${label}: ${res.status}`)
    t.match(res.contentType, /^application\/json/, `${label}: application/json`)
    isShape(label, res.json)
  }
})

async function asAnswer (pending: ReturnType<typeof call>): Promise<{ status: number, json: unknown, contentType: string | null }> {
  const res = await pending
  return { status: res.status, json: res.json, contentType: res.headers.get('content-type') }
}

t.test('rule 18: csv_archive answers 200 when queued and 420 when asked again within the limit', async (t) => {
  const first = await call(`${base}/devices/${south.id}/readings/csv_archive`, { token: owner.token })
  t.equal(first.status, 200, 'queued')
  t.match(first.json, { id: 'ok', message: String })
  const again = await call(`${base}/devices/${south.id}/readings/csv_archive`, { token: owner.token })
  t.equal(again.status, 420, 'rate limited')
  t.match(again.json, { id: String, message: String })
})

t.test('rule 36 (and 16: 429 for throttling): a kit page, a connector run and the web\'s polling stay within the default rate limit; past it, 429 with Retry-After', async (t) => {
  const limited = await startPlatform(t, { rateLimitPerMinute: 90 })
  const lb = limited.base
  const person = await signUp(limited)
  const kits = await Promise.all(Array.from({ length: 7 }, async (_, i) => await addDevice(limited, person, { name: `Kit ${i}` })))
  const main = kits[0]
  if (main === undefined) throw new Error('no kit')
  const now = Date.now()
  const data = Array.from({ length: 30 }, (_, m) => ({
    recorded_at: new Date(now - (30 - m) * 60_000).toISOString().replace(/\.\d+Z$/, 'Z'),
    sensors: [55, 56, 14, 53, 58, 10].map((id) => ({ id, value: m + id / 100 }))
  }))
  t.equal((await postReadings(limited, person, main.id, data)).status, 200)

  // A browser (one address): the map, a kit page with the owner's other kits, two charts, then a
  // minute of polling every 15 s, each poll bringing new data and the charts again.
  const browser = '127.0.0.36'
  const chart = (sensor: number): string => `${lb}/devices/${main.id}/readings?from=${new Date(now - 7 * 86_400_000).toISOString()}&to=${new Date(now).toISOString()}&rollup=630s&sensor_id=${sensor}&all_intervals=true`
  const view = [`${lb}/devices/world_map`, `${lb}/devices/${main.id}`, ...kits.slice(1).map((k) => `${lb}/devices/${k.id}`), chart(55), chart(56)]
  for (let poll = 0; poll < 4; poll++) view.push(`${lb}/devices/${main.id}`, chart(55), chart(56))
  const statuses = []
  for (const url of view) statuses.push((await callFrom(browser, url)).status)
  t.same(statuses.filter((s) => s !== 200), [], `the browser's ${view.length} requests of a minute all answered 200`)

  // The connector (another address): __load__, then one 1m request per sensor of the kit from 2001, 5 at once.
  const script = '127.0.0.37'
  const loaded = await callFrom(script, `${lb}/devices/${main.id}`)
  const sensors = ((loaded.json as { data: { sensors: Array<{ id: number }> } }).data.sensors).map((s) => s.id)
  const answers = await runPython<Array<{ sensor_id: number, status: number, readings: unknown[] | null }>>('connector.py', { cmd: 'readings', base: lb, device_id: main.id, sensor_ids: sensors, rollup: '1m', min_date: '2001-01-01 00:00:00+00:00', local_addr: script })
  t.same(answers.filter((a) => a.status !== 200).map((a) => [a.sensor_id, a.status]), [], `all ${answers.length} readings requests answered 200`)
  t.equal(answers.find((a) => a.sensor_id === 55)?.readings?.length, 30, 'thirty minutes of sensor 55')

  // A client that does not stop: 429, JSON, Retry-After; the others are not affected.
  const greedy = '127.0.0.38'
  let refused: Awaited<ReturnType<typeof callFrom>> | undefined
  for (let i = 0; i < 120 && refused === undefined; i++) {
    const res = await callFrom(greedy, `${lb}/devices/${main.id}`)
    if (res.status !== 200) refused = res
  }
  t.equal(refused?.status, 429, 'throttling is a 429, which both clients retry')
  t.match(refused?.json, { id: 'too_many_requests', message: String })
  t.ok(Number(refused?.headers.get('retry-after')) > 0, 'with Retry-After')
  t.equal((await callFrom('127.0.0.39', `${lb}/devices/${main.id}`)).status, 200, 'another address is still served')
  t.equal((await call(`${lb}/devices/${main.id}`, { token: person.token })).status, 200, 'a signed-in user is counted apart')
})
