import { randomBytes } from 'node:crypto'
import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { bearer, buildApi, signUp, signUpAs } from '@esp/test-helpers/api'
import { collect, connectMqtt, subscribeGranted, until } from '@esp/test-helpers/mqtt'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

/**
 * The access matrix: who may do what to a device or a user, as one table read as a spec. Each row
 * is a route; its statuses are for anonymous, another citizen, a researcher, the owner (of the
 * devices, and the "self" of user routes) and an admin, on a public and on a private device.
 * Every answer is also searched, body and headers, for the secret values themselves, so a leak
 * through any field is found; and for those who may not see a private device, each route that
 * names it must answer byte for byte as it answers an id that names no device.
 */
type Role = 'anonymous' | 'citizen' | 'researcher' | 'owner' | 'admin'
const ROLES: Role[] = ['anonymous', 'citizen', 'researcher', 'owner', 'admin']
const SEE_DEVICE_SECRETS: Role[] = ['owner', 'admin']
/** Statuses in ROLES order. */
type Statuses = [anonymous: number, citizen: number, researcher: number, owner: number, admin: number]
type Kind = 'public' | 'private'

interface Target { kind: Kind, id: number, name: string, uuid: string, mac: string, lat: number, lng: number, importId: number }
interface Request { method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, payload?: string | object, headers?: Record<string, string> }
interface Rule {
  route: string
  /** one line of statuses for routes about no device in particular, else one per kind of device */
  expect: Statuses | Record<Kind, Statuses>
  request: (device: Target, as: Role) => Request
  /** the device is made anew for each cell, because the request uses it up (archived or not) */
  fresh?: 'active' | 'archived'
  /** the path names the device: a private one answers as a missing id to those who may not see it */
  byId?: true
}

const MISSING_ID = 987654321
const all = (status: number): Statuses => [status, status, status, status, status]
// These routes need a signed-in caller: an anonymous one is refused before the device is looked
// up (or the body read), so a private device and a missing id are the same 401 to it.
const ownerOrAdmin = (ok: number): Record<Kind, Statuses> => ({ public: [401, 403, 403, ok, ok], private: [401, 404, 404, ok, ok] })
const readable: Record<Kind, Statuses> = { public: all(200), private: [404, 404, 404, 200, 200] }
const json = (method: NonNullable<Request['method']>, url: string, payload: object): Request => ({ method, url, payload })
const CSV = 'TIME,55\n2026-10-01T00:00:00Z,1.5\n'
const csv = (url: string): Request => ({ method: 'POST', url, payload: CSV, headers: { 'content-type': 'text/csv' } })
const reading = (at: string, value: number): { data: object[] } => ({ data: [{ recorded_at: at, sensors: [{ id: 55, value }] }] })

t.test('the access matrix: every route that shows or changes a device or a user, for every role', async (t) => {
  const harness = await buildPlatform(t, { mqtt: true })
  const { app, database } = harness
  const sql = database.sql
  const owner = await signUp(app)
  const users: Record<Role, Awaited<ReturnType<typeof signUp>> | null> = {
    anonymous: null,
    citizen: await signUp(app),
    researcher: await signUpAs(harness, 'researcher'),
    owner,
    admin: await signUpAs(harness, 'admin')
  }
  const headersOf = (role: Role): Record<string, string> => { const user = users[role]; return user === null ? {} : bearer(user.token) }

  // Secret values and who may see them; everyone else must never receive them, in any field.
  const secrets: Array<{ label: string, forms: string[], seenBy: Role[], required: boolean }> = []
  /** `required`: the scan must find it at least once where it belongs, or the scan proves nothing */
  const secret = (label: string, seenBy: Role[], forms: string[], required = true): void => {
    secrets.push({ label, forms: forms.map((f) => f.toLowerCase()), seenBy, required })
  }
  const hex = (bytes: number): string => randomBytes(bytes).toString('hex')
  const forwarding = { username: `fwduser${hex(6)}`, token: `fwdtoken${hex(8)}`, legacy: `legacykey${hex(8)}` }
  await sql`update users set forwarding_username = ${forwarding.username}, forwarding_token = ${forwarding.token}, legacy_api_key = ${forwarding.legacy} where id = ${owner.id}`
  const [hash] = await sql<{ password_hash: string }[]>`select password_hash from users where id = ${owner.id}`
  secret('password hash', [], [hash?.password_hash ?? 'no hash'], false)
  secret('e-mail', ['owner', 'admin'], [owner.email])
  secret('forwarding_username', ['owner'], [forwarding.username])
  secret('forwarding_token', ['owner'], [forwarding.token])
  secret('legacy_api_key', ['owner', 'admin'], [forwarding.legacy])

  const tag = `Matrix${hex(4)}`
  await sql`insert into tags (name) values (${tag})`
  const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 86_400_000)
  const made: Target[] = []
  /** A device of the owner with every secret set: token, MAC, status message, location, a tag. */
  const device = async (kind: Kind): Promise<Target> => {
    const n = made.length + 1
    const bytes = [0x02, ...randomBytes(5)].map((b) => b.toString(16).padStart(2, '0'))
    const mac = bytes.join(':')
    const token = `tok${hex(6)}`
    const status = `statusmsg${hex(6)}`
    const name = kind === 'private' ? `Hidden heron ${hex(4)}` : `Open owl ${hex(4)}`
    const [lat, lng] = [10 + n / 10, 20 + n / 10]
    const id = await makeDevice(database, owner.id, { isPrivate: kind === 'private', name, mac })
    const [row] = await sql<{ uuid: string }[]>`
      update devices set device_token = ${token}, last_status_message = ${JSON.stringify({ hw_ver: '2.1', note: status })}::jsonb,
        latitude = ${lat}, longitude = ${lng}, exposure = 'outdoor'
      where id = ${id} returning uuid::text`
    await sql`insert into device_tags (device_id, tag_id) select ${id}, id from tags where name = ${tag}`
    // The first two are the devices every row is about; the others are used up by one cell each.
    const required = made.length < 2
    secret(`device_token of the ${kind} device ${id}`, SEE_DEVICE_SECRETS, [token], required)
    secret(`mac_address of the ${kind} device ${id}`, SEE_DEVICE_SECRETS, [mac, mac.replaceAll(':', '-'), mac.replaceAll(':', '')], required)
    secret(`last_status_message of the ${kind} device ${id}`, SEE_DEVICE_SECRETS, [status], required)
    if (kind === 'private') {
      secret(`name of the private device ${id}`, SEE_DEVICE_SECRETS, [name], required)
      secret(`uuid of the private device ${id}`, SEE_DEVICE_SECRETS, [row?.uuid ?? 'no uuid'], required)
    }
    const target: Target = { kind, id, name, uuid: row?.uuid ?? '', mac, lat, lng, importId: 0 }
    made.push(target)
    return target
  }
  const targets: Record<Kind, Target> = { public: await device('public'), private: await device('private') }
  for (const [kind, value] of [['public', 12.25], ['private', 271.8281]] as const) {
    const posted = await app.inject({ method: 'POST', url: `/v0/devices/${targets[kind].id}/readings`, headers: bearer(owner.token), payload: reading(at.toISOString(), value) })
    t.equal(posted.statusCode, 200, `the ${kind} device has a reading`)
    const imported = await app.inject({ ...csv(`/v0/devices/${targets[kind].id}/readings/csv`), headers: { ...bearer(owner.token), 'content-type': 'text/csv' } })
    t.equal(imported.statusCode, 202, `the ${kind} device has an import`)
    targets[kind].importId = imported.json().id
  }
  secret('readings of the private device', SEE_DEVICE_SECRETS, ['271.8281'])
  const experiment = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { name: 'Matrix', device_ids: [targets.public.id, targets.private.id] } })
  t.equal(experiment.statusCode, 201, 'an experiment of the owner holds both devices')
  const experimentId: number = experiment.json().id
  const history = `rollup=1h&sensor_id=55&from=${new Date(at.getTime() - 3_600_000).toISOString()}&to=${new Date(at.getTime() + 3_600_000).toISOString()}`

  const rules: Rule[] = [
    // Devices
    { route: 'GET /devices/:id', byId: true, expect: readable, request: (d) => ({ url: `/v0/devices/${d.id}` }) },
    { route: 'PATCH /devices/:id', byId: true, expect: { public: [401, 403, 403, 200, 200], private: [401, 404, 404, 200, 200] }, request: (d) => json('PATCH', `/v0/devices/${d.id}`, { description: 'patched' }) },
    { route: 'PUT /devices/:id', byId: true, expect: { public: [401, 403, 403, 200, 200], private: [401, 404, 404, 200, 200] }, request: (d) => json('PUT', `/v0/devices/${d.id}`, { description: 'put' }) },
    // A new token of the platform's making (issue 34); a body's device_token is refused for everyone (token-oracle.test.ts).
    { route: 'POST /devices/:id/device_token', byId: true, fresh: 'active', expect: { public: [401, 403, 403, 200, 200], private: [401, 404, 404, 200, 200] }, request: (d) => ({ method: 'POST', url: `/v0/devices/${d.id}/device_token` }) },
    { route: 'PATCH /devices/:id {device_token}', byId: true, expect: { public: [401, 403, 403, 422, 422], private: [401, 404, 404, 422, 422] }, request: (d) => json('PATCH', `/v0/devices/${d.id}`, { device_token: 'ch0sen' }) },
    { route: 'DELETE /devices/:id', byId: true, fresh: 'active', expect: { public: [401, 403, 403, 200, 200], private: [401, 404, 404, 200, 200] }, request: (d) => ({ method: 'DELETE', url: `/v0/devices/${d.id}` }) },
    // Only admins restore; everyone else is refused before the device is looked up, so nothing is learnt.
    { route: 'POST /devices/:id/restore', byId: true, fresh: 'archived', expect: { public: [401, 403, 403, 403, 200], private: [401, 403, 403, 403, 200] }, request: (d) => ({ method: 'POST', url: `/v0/devices/${d.id}/restore` }) },
    { route: 'GET /devices (q[id_eq])', expect: { public: all(200), private: all(200) }, request: (d) => ({ url: `/v0/devices?q[id_eq]=${d.id}` }) },
    { route: 'GET /devices (q[name_cont])', expect: { public: all(200), private: all(200) }, request: (d) => ({ url: `/v0/devices?q[name_cont]=${encodeURIComponent(d.name)}` }) },
    { route: 'GET /devices (q[uuid_eq])', expect: { public: all(200), private: all(200) }, request: (d) => ({ url: `/v0/devices?q[uuid_eq]=${d.uuid}` }) },
    { route: 'GET /devices (q[owner_id_eq], sorted)', expect: all(200), request: () => ({ url: `/v0/devices?q[owner_id_eq]=${owner.id}&q[sort]=name%20asc` }) },
    { route: 'GET /devices (near)', expect: { public: all(200), private: all(200) }, request: (d) => ({ url: `/v0/devices?near=${d.lat},${d.lng}&within=1` }) },
    { route: 'GET /devices (with_tags)', expect: all(200), request: () => ({ url: `/v0/devices?with_tags=${tag}` }) },
    { route: 'GET /devices (q[mac_address_eq], admins only)', expect: { public: [400, 400, 400, 400, 200], private: [400, 400, 400, 400, 200] }, request: (d) => ({ url: `/v0/devices?q[mac_address_eq]=${d.mac}` }) },
    { route: 'GET /devices (q[is_private_eq], admins only)', expect: [400, 400, 400, 400, 200], request: () => ({ url: '/v0/devices?q[is_private_eq]=true' }) },
    { route: 'GET /devices/world_map', expect: all(200), request: () => ({ url: '/v0/devices/world_map' }) },
    { route: 'GET /devices/fresh_world_map', expect: all(200), request: () => ({ url: '/v0/devices/fresh_world_map' }) },
    { route: 'GET /devices/compact_map', expect: all(200), request: () => ({ url: '/v0/devices/compact_map' }) },
    { route: 'GET /devices/compact_map (measurement)', expect: all(200), request: () => ({ url: '/v0/devices/compact_map?measurement=1' }) },
    { route: 'GET /search', expect: { public: all(200), private: all(200) }, request: (d) => ({ url: `/v0/search?q=${encodeURIComponent(d.name.split(' ')[2] ?? '')}` }) },
    { route: 'GET /tags', expect: all(200), request: () => ({ url: '/v0/tags?per_page=1000' }) },
    // Readings
    { route: 'GET /devices/:id/readings', byId: true, expect: readable, request: (d) => ({ url: `/v0/devices/${d.id}/readings?${history}` }) },
    { route: 'GET /devices/:id/readings/export', byId: true, expect: readable, request: (d) => ({ url: `/v0/devices/${d.id}/readings/export?format=ndjson` }) },
    // An area's statistics and grid: a private device named by id is a missing one, and a box
    // finds it only for those who may see it (its readings are a secret searched for).
    { route: 'GET /readings/statistics (device_ids)', byId: true, expect: readable, request: (d) => ({ url: `/v0/readings/statistics?device_ids=${d.id}&per_device=true&${history}` }) },
    { route: 'GET /readings/statistics (bbox)', expect: all(200), request: () => ({ url: `/v0/readings/statistics?bbox=19.9,9.9,21,11&per_device=true&percentiles=50&${history}` }) },
    { route: 'GET /readings/interpolation', expect: all(200), request: () => ({ url: `/v0/readings/interpolation?bbox=19.9,9.9,21,11&cell_size=5&max_distance=50&${history.replace('rollup=1h&', '')}` }) },
    // A short-lived link for a browser's download: for whoever may see the device, as that user.
    { route: 'POST /devices/:id/readings/export/link', byId: true, expect: { public: [401, 200, 200, 200, 200], private: [401, 404, 404, 200, 200] }, request: (d) => ({ method: 'POST', url: `/v0/devices/${d.id}/readings/export/link` }) },
    // A forged link's key is refused before the device is looked up, whoever sends it.
    { route: 'GET /devices/:id/readings/export (forged download link)', byId: true, expect: { public: all(403), private: all(403) }, request: (d) => ({ url: `/v0/devices/${d.id}/readings/export?format=ndjson&download_key=1.4102444800.${'A'.repeat(43)}` }) },
    { route: 'GET /devices/:id/readings/csv_archive', byId: true, fresh: 'active', expect: ownerOrAdmin(200), request: (d) => ({ url: `/v0/devices/${d.id}/readings/csv_archive` }) },
    // The mailed link is the credential; a forged one is refused before the device is looked up.
    { route: 'GET /devices/:id/readings/csv_archive/:file (forged link)', byId: true, expect: { public: all(403), private: all(403) }, request: (d) => ({ url: `/v0/devices/${d.id}/readings/csv_archive/${d.id}_1764000000000.csv?expires=4102444800&signature=forged` }) },
    { route: 'POST /devices/:id/readings', byId: true, expect: ownerOrAdmin(200), request: (d) => json('POST', `/v0/devices/${d.id}/readings`, reading(at.toISOString(), d.kind === 'private' ? 271.8281 : 12.25)) },
    { route: 'POST /devices/:id/readings/csv', byId: true, expect: ownerOrAdmin(202), request: (d) => csv(`/v0/devices/${d.id}/readings/csv`) },
    { route: 'GET /devices/:id/readings/csv/:import_id', byId: true, expect: ownerOrAdmin(200), request: (d) => ({ url: `/v0/devices/${d.id}/readings/csv/${d.importId}` }) },
    // Experiments: a private device of someone else is an unknown device id
    { route: 'POST /experiments (device_ids)', byId: true, expect: { public: [401, 201, 201, 201, 201], private: [401, 422, 422, 201, 201] }, request: (d) => json('POST', '/v0/experiments', { name: 'Mine', device_ids: [d.id] }) },
    { route: 'GET /experiments', expect: all(200), request: () => ({ url: '/v0/experiments' }) },
    { route: 'GET /experiments/:id', expect: all(200), request: () => ({ url: `/v0/experiments/${experimentId}` }) },
    // Users and authentication ("owner" is the user the route is about)
    { route: 'GET /users', expect: all(200), request: () => ({ url: `/v0/users?q[id_eq]=${owner.id}` }) },
    { route: 'GET /users/:id (its devices)', expect: all(200), request: () => ({ url: `/v0/users/${owner.id}` }) },
    { route: 'POST /users', expect: all(201), request: (_d, as) => json('POST', '/v0/users', { username: `new-${as}`, email: `new-${as}@example.org`, password: 'long enough 1' }) },
    { route: 'PATCH /users/:id', expect: [401, 403, 403, 200, 200], request: () => json('PATCH', `/v0/users/${owner.id}`, { city: 'Oslo' }) },
    { route: 'PUT /users/:username', expect: [401, 403, 403, 200, 200], request: () => json('PUT', `/v0/users/${owner.username}`, { city: 'Oslo' }) },
    { route: 'GET /me (its devices)', expect: [401, 200, 200, 200, 200], request: () => ({ url: '/v0/me' }) },
    { route: 'PATCH /me', expect: [401, 200, 200, 200, 200], request: () => json('PATCH', '/v0/me', { url: 'https://example.org' }) },
    { route: 'PUT /me', expect: [401, 200, 200, 200, 200], request: () => json('PUT', '/v0/me', { url: 'https://example.org' }) },
    { route: 'PATCH /me/avatar', expect: [401, 200, 200, 200, 200], request: () => json('PATCH', '/v0/me/avatar', { filename: 'a.png' }) },
    { route: 'POST /sessions', expect: all(200), request: () => json('POST', '/v0/sessions', { username: owner.username, password: owner.password }) },
    { route: 'POST /password_resets', expect: all(200), request: () => json('POST', '/v0/password_resets', { email_or_username: owner.email }) },
    { route: 'GET /password_resets/:token', expect: all(404), request: () => ({ url: '/v0/password_resets/not-a-code' }) },
    { route: 'PATCH /password_resets/:token', expect: all(404), request: () => json('PATCH', '/v0/password_resets/not-a-code', { password: 'long enough 1' }) },
    { route: 'GET /applications', expect: [401, 200, 200, 200, 200], request: () => ({ url: '/v0/applications' }) },
    { route: 'POST /applications', expect: [401, 201, 201, 201, 201], request: () => json('POST', '/v0/applications', { name: 'app' }) }
  ]

  const seen = new Set<string>()
  const send = async (request: Request, as: Role): Promise<LightMyRequestResponse> =>
    await app.inject({ method: request.method ?? 'GET', url: request.url, headers: { ...request.headers, ...headersOf(as) }, ...(request.payload === undefined ? {} : { payload: request.payload }) })
  /**
   * The secrets found in an answer that this role may not see; records the ones it may. What the
   * caller sent (a name in a filter, echoed in the Link header) is no leak and is not looked for.
   */
  const leaks = (res: LightMyRequestResponse, as: Role, request: Request): string[] => {
    const text = `${JSON.stringify(res.headers)}\n${res.body}`.toLowerCase()
    const sent = `${decodeURIComponent(request.url)} ${JSON.stringify(request.payload ?? '')}`.toLowerCase()
    const found: string[] = []
    for (const s of secrets) {
      if (s.forms.some((form) => sent.includes(form)) || !s.forms.some((form) => text.includes(form))) continue
      if (s.seenBy.includes(as)) seen.add(s.label)
      else found.push(s.label)
    }
    const hidden = targets.private.id
    const named = new RegExp(`/devices/${hidden}(?!\\d)`).test(text) || deviceIdsIn(res).includes(hidden)
    if (named && SEE_DEVICE_SECRETS.includes(as)) seen.add('private device id')
    else if (named) found.push('private device id')
    return found
  }

  const fresh = async (rule: Rule, kind: Kind): Promise<Target> => {
    if (rule.fresh === undefined) return targets[kind]
    const spare = await device(kind)
    if (rule.fresh === 'archived') await sql`update devices set archived_at = now(), state = 'archived' where id = ${spare.id}`
    return spare
  }
  for (const rule of rules) {
    const kinds: Kind[] = Array.isArray(rule.expect) ? ['public'] : ['public', 'private']
    for (const kind of kinds) {
      const expected = Array.isArray(rule.expect) ? rule.expect : rule.expect[kind]
      for (const [i, as] of ROLES.entries()) {
        const target = await fresh(rule, kind)
        const cell = `${rule.route}${kinds.length > 1 ? ` on a ${kind} device` : ''} as ${as}`
        const request = rule.request(target, as)
        const res = await send(request, as)
        t.equal(res.statusCode, expected[i], cell, { body: res.body.slice(0, 300) })
        if (res.statusCode >= 400) {
          const body = res.json()
          t.ok(typeof body.id === 'string' && typeof body.message === 'string' && 'errors' in body && 'url' in body, `${cell}: the error body`)
        }
        t.same(leaks(res, as, request), [], `${cell}: no secret it may not see`)
        if (rule.byId === true && kind === 'private' && !SEE_DEVICE_SECRETS.includes(as)) {
          const missing = await send(rule.request({ ...target, id: MISSING_ID }, as), as)
          t.same([res.statusCode, res.headers['content-type'], res.body], [missing.statusCode, missing.headers['content-type'], missing.body.replaceAll(String(MISSING_ID), String(target.id))], `${cell}: answered as an id that names no device`)
        }
      }
    }
  }
  // The scan is only worth something if it finds the secrets where they belong.
  t.same(secrets.filter((s) => s.required).map((s) => s.label).concat('private device id').filter((label) => !seen.has(label)), [], 'every secret was seen by someone who may see it')

  // DELETE of a user needs a fresh target per role; "owner" deletes themself.
  for (const [i, as] of ROLES.entries()) {
    const target = await signUp(app)
    const token = as === 'owner' ? target.token : users[as]?.token
    const res = await app.inject({ method: 'DELETE', url: `/v0/users/${target.id}`, headers: token === undefined ? {} : bearer(token) })
    t.equal(res.statusCode, [401, 403, 403, 200, 200][i], `DELETE /users/:id as ${as}`)
    const me = await signUp(app)
    t.equal((await app.inject({ method: 'DELETE', url: '/v0/me', headers: as === 'anonymous' ? {} : bearer(me.token) })).statusCode, as === 'anonymous' ? 401 : 200, `DELETE /me as ${as}`)
  }

  // MQTT live topics (the broker's access rules): a private device is refused as a missing one.
  const mqttUrl = `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`
  const clients = await Promise.all(ROLES.map(async (as) => {
    const user = users[as]
    return await connectMqtt(t, mqttUrl, { clientId: `matrix-${as}`, ...(user === null ? {} : { username: user.username, password: user.token }) })
  }))
  const live: Array<[Kind | 'missing', Statuses]> = [['public', all(0)], ['private', [128, 128, 128, 0, 0]], ['missing', all(128)]]
  for (const [kind, expected] of live) {
    const id = kind === 'missing' ? MISSING_ID : targets[kind].id
    for (const [i, as] of ROLES.entries()) {
      const client = clients[i]
      if (client !== undefined) t.equal(await subscribeGranted(client, `devices/${id}/readings`), expected[i], `MQTT subscribe devices/:id/readings on a ${kind} device as ${as}`)
    }
  }
  const heard = clients.map((client) => collect(client))
  for (const [i, client] of clients.entries()) t.equal(await subscribeGranted(client, 'devices/+/readings'), 0, `MQTT subscribe devices/+/readings as ${ROLES[i] ?? ''}`)
  const later = new Date(at.getTime() + 60_000).toISOString()
  for (const kind of ['private', 'public'] as const) {
    await app.inject({ method: 'POST', url: `/v0/devices/${targets[kind].id}/readings`, headers: bearer(owner.token), payload: reading(later, kind === 'private' ? 271.8281 : 12.25) })
  }
  await until(() => heard.every((h, i) => h.messages.some((m) => m.topic === `devices/${targets.public.id}/readings`) && (!SEE_DEVICE_SECRETS.includes(ROLES[i] ?? 'anonymous') || h.messages.some((m) => m.topic === `devices/${targets.private.id}/readings`))), 5000, 'the live readings')
  for (const [i, as] of ROLES.entries()) {
    const got = (heard[i]?.messages ?? []).some((m) => m.topic === `devices/${targets.private.id}/readings` || m.payload.includes('271.8281'))
    t.equal(got, SEE_DEVICE_SECRETS.includes(as), `MQTT devices/+/readings as ${as}: the private device's readings ${got ? 'arrive' : 'stay hidden'}`)
  }
})

/** Device ids an answer names as numbers: `device_id`, `device_ids`, and the `id` of device objects. */
function deviceIdsIn (res: LightMyRequestResponse): number[] {
  if (!String(res.headers['content-type'] ?? '').includes('json')) return []
  const ids: number[] = []
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) { value.forEach(walk); return }
    if (typeof value !== 'object' || value === null) return
    const record = value as Record<string, unknown>
    for (const [key, inner] of Object.entries(record)) {
      if ((key === 'device_id' || key === 'device_ids') && (typeof inner === 'number' || Array.isArray(inner))) ids.push(...[inner].flat().filter((v): v is number => typeof v === 'number'))
      walk(inner)
    }
    if (typeof record.id === 'number' && ('device_token' in record || 'data_policy' in record || record.type === 'Device')) ids.push(record.id)
  }
  try { walk(JSON.parse(res.body)) } catch { /* not JSON after all */ }
  return ids
}

t.test('who sees which fields of a user', async (t) => {
  const harness = await buildPlatform(t)
  const { app } = harness
  const self = await signUpAs(harness, 'researcher')
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const view = async (token?: string) => (await app.inject({ url: `/v0/users/${self.id}`, headers: token === undefined ? {} : bearer(token) })).json()
  const expectations: [string, string | undefined, { email: boolean, keys: boolean, forwarding: boolean }][] = [
    ['anonymous', undefined, { email: false, keys: false, forwarding: false }],
    ['another citizen', other.token, { email: false, keys: false, forwarding: false }],
    ['the user', self.token, { email: true, keys: true, forwarding: true }],
    ['an admin', admin.token, { email: true, keys: true, forwarding: false }]
  ]
  for (const [who, token, sees] of expectations) {
    const user = await view(token)
    t.equal(user.email === '[FILTERED]', !sees.email, `${who}: email`)
    t.equal(user.legacy_api_key === '[FILTERED]', !sees.keys, `${who}: legacy_api_key`)
    t.equal(user.forwarding_token === '[FILTERED]', !sees.forwarding, `${who}: forwarding_token`)
    t.equal(user.forwarding_username === '[FILTERED]', !sees.forwarding, `${who}: forwarding_username`)
  }
})

t.test('secrets never reach the log', async (t) => {
  const lines: string[] = []
  const harness = await buildApi(t, { server: { logLevel: 'debug', logStream: { write: (line: string) => { lines.push(line) } } } })
  const { app } = harness
  const user = await signUp(app, { password: 'a password to hide' })
  await app.inject({ url: `/v0/me?access_token=${user.token}` })
  await app.inject({ url: '/v0/me', headers: bearer(user.token) })
  await app.inject({ url: '/v0/me', headers: { authorization: `Basic ${Buffer.from(`${user.username}:a password to hide`).toString('base64')}` } })
  await app.inject({ method: 'POST', url: `/v0/sessions?username=${user.username}&password=a%20password%20to%20hide` })
  const log = lines.join('')
  t.ok(log.includes('incoming request'), 'requests are logged')
  t.notOk(log.includes(user.token), 'no access token in the log')
  t.notOk(log.includes('a password to hide') || log.includes('a%20password%20to%20hide'), 'no password in the log')
  t.match(log, /access_token=\[REDACTED\]/)
})
