import Fastify, { type FastifyRequest } from 'fastify'
import t from 'tap'
import {
  compileListQuery, Device, deviceService, loadDevice, presentDevice, presentDevices, presentUser, systemClock, User, type Viewer
} from '@esp/domain'
import { makeDevice, setUserRole } from '@esp/db/testing'
import { baseUrl } from '@esp/http'
import { bearer, signUp } from '@esp/test-helpers/api'
import { buildPlatform } from '@esp/test-helpers/platform'
import { seededRandom } from '@esp/test-helpers/random'

/*
 * Representations kept whole (issue 37): every device, page and user the platform sends, from a
 * kept text or read anew, is byte for byte what the route sent before texts were kept, which this
 * file rebuilds beside it (`reference`: the old handlers, the one read statement, the presenter,
 * Fastify's serializer of the route's schema). A generated fleet goes through generated writes of
 * everything a representation shows, each by the path that makes it (the API, the ingest, or SQL
 * as an operator would), and the clock moves; after each, every viewer reads every device, pages
 * and users twice (the second read is served from the kept text) and both must match.
 */

const MINUTE = 60_000
const SEED = Number(process.env.KEPT_SEED ?? 37)

t.test(`kept representations are byte for byte the old ones, over generated writes (seed ${SEED})`, async (t) => {
  let now = Date.now()
  const clock = (): Date => new Date(now)
  // Tokens keep the real clock: this one moves days ahead.
  const harness = await buildPlatform(t, { clock, auth: { clock: systemClock } })
  const { app, database } = harness
  const random = seededRandom(SEED)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T

  // The old routes, as they were: one read statement, the presenter, the route's serializer.
  const viewers = new Map<string, Viewer>()
  const viewerOf = (request: FastifyRequest): Viewer | null => viewers.get(String(request.headers['x-viewer'])) ?? null
  const reference = Fastify({ logger: false })
  // Links are made as the platform makes them (its public URL, else the request's host).
  reference.decorate('httpSettings', app.httpSettings)
  reference.addSchema(Device)
  reference.addSchema(User)
  const presenting = (request: FastifyRequest) => ({ viewer: viewerOf(request), baseUrl: baseUrl(request), now: clock() })
  reference.get<{ Params: { id: string } }>('/v0/devices/:id', { schema: { response: { 200: { $ref: 'Device' } } } }, async (request) =>
    presentDevice(await loadDevice(database, request.params.id, viewerOf(request)), presenting(request)))
  reference.get('/v0/devices', { schema: { response: { 200: { type: 'array', items: { $ref: 'Device' } } } } }, async (request) => {
    const raw = new URLSearchParams(request.url.split('?')[1] ?? '')
    const query = compileListQuery(raw, deviceService.deviceFilters, { admin: viewerOf(request)?.role === 'admin' })
    const { rows } = await deviceService.listDevices(database, query, { withTags: raw.get('with_tags') ?? undefined }, viewerOf(request))
    return presentDevices(rows, presenting(request))
  })
  reference.get<{ Params: { id: string } }>('/v0/users/:id', { schema: { response: { 200: { $ref: 'User' } } } }, async (request) => {
    const { user, devices } = await deviceService.userWithDevices(database, Number(request.params.id), viewerOf(request))
    return presentUser(user, { viewer: viewerOf(request), baseUrl: baseUrl(request), devices: presentDevices(devices, presenting(request)) })
  })
  reference.setErrorHandler(async (err: { statusCode?: number, message: string }, _request, reply) => await reply.code(err.statusCode ?? 500).send({ error: err.statusCode === undefined ? err.message : 'x' }))
  t.teardown(async () => { await reference.close() })

  // The fleet: owners with devices public and private, a stranger, an admin.
  await database.sql`insert into tags (name, description) values ('Barcelona', 'the city'), ('Schools', null)`
  const owners = await Promise.all([0, 1, 2].map(async () => await signUp(app)))
  const stranger = await signUp(app)
  const admin = await signUp(app)
  await setUserRole(database, admin.id, 'admin')
  for (const [user, role] of [...owners.map((o) => [o, 'citizen'] as const), [stranger, 'citizen'] as const, [admin, 'admin'] as const]) {
    viewers.set(String(user.id), { id: user.id, username: user.username, role })
  }
  const tokens = new Map([...owners, stranger, admin].map((u) => [String(u.id), u.token]))
  const devices: Array<{ id: number, owner: (typeof owners)[number] }> = []
  const addDevice = async (owner: (typeof owners)[number]): Promise<void> => {
    const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: `d${devices.length}`, latitude: 41.39 + random() / 10, longitude: 2.17, exposure: pick(['indoor', 'outdoor']), user_tags: random() < 0.5 ? 'Barcelona' : '' } })
    t.equal(created.statusCode, 201, created.body)
    devices.push({ id: created.json().id, owner })
  }
  for (const owner of owners) for (let i = 0; i < 3; i++) await addDevice(owner)
  // A device of a kit-less row, with no token, as an operator's import would leave it.
  devices.push({ id: (await makeDevice(database, { ownerId: owners[0]?.id ?? 0, name: 'bare' })).id, owner: owners[0] as (typeof owners)[number] })
  const [experiment] = await database.sql<{ id: number }[]>`insert into experiments (owner_id, name) values (${owners[0]?.id ?? 0}, 'street') returning id`

  const writes: Array<[string, () => Promise<void>]> = [
    ['rename through the API', async () => {
      const d = pick(devices)
      await app.inject({ method: 'PATCH', url: `/v0/devices/${d.id}`, headers: bearer(d.owner.token), payload: { name: `n${Math.floor(random() * 1e6)}`, description: pick(['a', null, 'é ☃ "quoted"']) } })
    }],
    ['privacy by SQL', async () => { await database.sql`update devices set is_private = not is_private where id = ${pick(devices).id}` }],
    ['tags by SQL', async () => {
      const d = pick(devices)
      const [tag] = await database.sql<{ id: number }[]>`select id from tags order by random() limit 1`
      if (random() < 0.5) await database.sql`insert into device_tags (device_id, tag_id) values (${d.id}, ${tag?.id ?? 0}) on conflict do nothing`
      else await database.sql`delete from device_tags where device_id = ${d.id}`
    }],
    ['postprocessing by SQL', async () => {
      await database.sql`insert into postprocessings (device_id, blueprint_url, meta) values (${pick(devices).id}, ${`https://b/${Math.floor(random() * 100)}`}, 'm')
        on conflict (device_id) do update set blueprint_url = excluded.blueprint_url, updated_at = now()`
    }],
    ['experiment by SQL', async () => {
      await database.sql`insert into experiment_devices (experiment_id, device_id) values (${experiment?.id ?? 0}, ${pick(devices).id}) on conflict do nothing`
    }],
    ['readings through the ingest', async () => {
      const d = pick(devices)
      const at = new Date(now - Math.floor(random() * 30) * MINUTE).toISOString()
      const res = await app.inject({ method: 'POST', url: `/v0/devices/${d.id}/readings`, headers: bearer(d.owner.token), payload: { data: [{ recorded_at: at, sensors: [{ id: pick([55, 56, 14]), value: Math.round(random() * 1000) / 10 }] }] } })
      t.equal(res.statusCode, 200, res.body)
    }],
    ['ingest status by SQL', async () => {
      await database.sql`insert into device_ingest_status (device_id, last_problem_at, skipped_values) values (${pick(devices).id}, now(), 1)
        on conflict (device_id) do update set skipped_values = device_ingest_status.skipped_values + 1`
    }],
    ['owner by SQL', async () => { await database.sql`update users set city = ${pick(['Lisboa', 'Oslo', null])}, url = ${`https://u/${Math.floor(random() * 100)}`} where id = ${pick(owners).id}` }],
    ['a sibling added', async () => { await addDevice(pick(owners)) }],
    ['a sibling archived and restored by SQL', async () => {
      const d = pick(devices)
      await database.sql`update devices set archived_at = case when archived_at is null then now() end where id = ${d.id}`
    }],
    ['the catalogue by SQL', async () => { await database.sql`update sensors set description = ${`s${Math.floor(random() * 100)}`} where id = ${pick([55, 56, 14])}` }],
    ['the clock', async () => { now += pick([MINUTE, 11 * MINUTE, 61 * MINUTE, 8 * 24 * 60 * MINUTE]) }]
  ]

  const asViewer = (id: string | null) => ({
    platform: id === null ? {} : bearer(tokens.get(id) ?? ''),
    reference: id === null ? {} : { 'x-viewer': id }
  })
  let compared = 0
  const compare = async (url: string, referenceUrl: string, who: string | null, label: string): Promise<void> => {
    const headers = asViewer(who)
    const expected = await reference.inject({ url: referenceUrl, headers: headers.reference })
    for (const pass of ['uncached or kept', 'kept']) {
      const got = await app.inject({ url, headers: headers.platform })
      if (got.statusCode !== expected.statusCode || (got.statusCode === 200 && got.body !== expected.body)) {
        t.fail(`${label}: ${url} as ${who ?? 'anonymous'} (${pass})`, { got: `${got.statusCode} ${got.body.slice(0, 3000)}`, expected: `${expected.statusCode} ${expected.body.slice(0, 3000)}` })
        throw new Error('differs')
      }
      compared++
    }
  }
  const readEverything = async (label: string): Promise<void> => {
    const who = [null, ...[...viewers.keys()]]
    for (const viewer of who) {
      for (const d of devices) await compare(`/v0/devices/${d.id}`, `/v0/devices/${d.id}`, viewer, label)
      for (const query of ['per_page=5', 'per_page=5&page=2', 'per_page=100', 'q[name_cont]=n&per_page=4', 'with_tags=Barcelona']) {
        await compare(`/v0/devices?${query}`, `/v0/devices?${query}`, viewer, label)
      }
      for (const owner of [...owners, stranger]) await compare(`/v0/users/${owner.id}`, `/v0/users/${owner.id}`, viewer, label)
      if (viewer !== null) await compare('/v0/me', `/v0/users/${viewer}`, viewer, label)
    }
  }

  await readEverything('the fleet as made')
  for (let step = 0; step < 30; step++) {
    const [label, write] = pick(writes)
    await write()
    await readEverything(`after step ${step}: ${label}`)
  }
  t.ok(compared > 5000, `${compared} answers compared`)

  // The kept text is what is sent: a change no trigger saw (triggers off, as replication
  // applies rows) is not seen until a revision moves. This proves the reads above were served
  // from kept texts, and that a revision is all that replaces them.
  const target = devices[0] as (typeof devices)[number]
  await database.sql`update devices set archived_at = null where id = ${target.id}`
  const before = (await app.inject({ url: `/v0/devices/${target.id}`, headers: bearer(target.owner.token) })).json()
  await database.sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    await tx`update devices set name = 'unseen' where id = ${target.id}`
  })
  t.equal((await app.inject({ url: `/v0/devices/${target.id}`, headers: bearer(target.owner.token) })).json().name, before.name, 'the kept text is sent while the revisions match')
  await database.sql`update devices set description = description where id = ${target.id}`
  t.equal((await app.inject({ url: `/v0/devices/${target.id}`, headers: bearer(target.owner.token) })).json().name, 'unseen', 'a new revision replaces it')
})

t.test('a remembered token checked by the read\'s own statement: revoked, it is a 401 on every kept read', async (t) => {
  const harness = await buildPlatform(t)
  const { app } = harness
  const owner = await signUp(app)
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'kept', is_private: true } })
  const id = created.json().id as number
  const reads = [`/v0/devices/${id}`, '/v0/devices?per_page=5', '/v0/devices?q[name_cont]=kept', `/v0/users/${owner.id}`, `/v0/users/${owner.username}`, '/v0/me']
  // Twice each: the token is remembered, then read by the routes' own statements.
  for (const url of [...reads, ...reads]) t.equal((await app.inject({ url, headers: bearer(owner.token) })).statusCode, 200, url)
  t.equal((await app.inject({ url: `/v0/devices/${id}`, headers: bearer(owner.token) })).json().device_token.length, 6, 'the owner\'s view')
  const changed = await app.inject({ method: 'PATCH', url: '/v0/me', headers: bearer(owner.token), payload: { password: 'a new password entirely' } })
  t.equal(changed.statusCode, 200, 'a password change ends every token')
  for (const url of reads) {
    const res = await app.inject({ url, headers: bearer(owner.token) })
    t.equal(res.statusCode, 401, `${url}: the revoked token is refused, not served as remembered`)
    t.notMatch(res.body, /kept/, 'and nothing of the private device is sent')
  }
})
