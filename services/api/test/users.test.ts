import t from 'tap'
import { makeDevice } from '@esp/db/testing'
import { bearer, buildApi, signUp, signUpAs } from '@esp/test-helpers/api'

const USER_KEYS = ['avatar', 'created_at', 'devices', 'email', 'first_name', 'forwarding_token', 'forwarding_username', 'id', 'joined_at',
  'last_name', 'legacy_api_key', 'location', 'profile_picture', 'role', 'updated_at', 'url', 'username', 'uuid']
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/

t.test('registration answers 201 with the contract shape, every key present', async (t) => {
  const { app } = await buildApi(t)
  const res = await app.inject({
    method: 'POST',
    url: '/v0/users',
    payload: { username: 'ada', email: 'Ada@Example.org', password: 'analytical engine', city: 'London', country_code: 'gb', url: 'https://ada.example.org', first_name: 'Ada', role: 'admin' }
  })
  t.equal(res.statusCode, 201)
  const user = res.json()
  t.same(Object.keys(user).sort(), USER_KEYS)
  t.match(user, {
    uuid: null,
    role: 'citizen',
    username: 'ada',
    email: '[FILTERED]',
    devices: [],
    profile_picture: '',
    avatar: null,
    first_name: 'Ada',
    last_name: null,
    url: 'https://ada.example.org',
    location: { city: 'London', country_code: 'GB', country: 'United Kingdom' }
  })
  t.match(user.joined_at, TIMESTAMP)
  t.match(user.updated_at, TIMESTAMP)
})

t.test('bad registrations get 422 naming each field, and nothing is written', async (t) => {
  const { app, database } = await buildApi(t)
  await signUp(app, { username: 'taken', email: 'taken@example.org' })
  const cases: [Record<string, unknown>, Record<string, RegExp>][] = [
    [{}, { email: /blank/, username: /blank/, password: /blank/ }],
    [{ username: 'TAKEN', email: 'other@example.org', password: 'long enough 1' }, { username: /already been taken/ }],
    [{ username: 'fresh', email: 'TAKEN@example.org', password: 'long enough 1' }, { email: /already been taken/ }],
    [{ username: 'fresh', email: 'not-an-email', password: 'long enough 1' }, { email: /invalid/ }],
    [{ username: 'fresh', email: 'f@example.org', password: 'short' }, { password: /too short/ }],
    [{ username: 'fresh', email: 'f@example.org', password: 'long enough 1', country_code: 'XX' }, { country_code: /country/ }],
    [{ username: 'fresh', email: 'f@example.org', password: 'long enough 1', url: 'javascript:alert(1)' }, { url: /URL/ }],
    [{ username: '12345', email: 'f@example.org', password: 'long enough 1' }, { username: /digits/ }],
    [{ username: 'a@b', email: 'f@example.org', password: 'long enough 1' }, { username: /invalid/ }],
    [{ username: 'x'.repeat(31), email: 'f@example.org', password: 'long enough 1' }, { username: /too long/ }],
    [{ username: { $ne: 1 }, email: 'f@example.org', password: 'long enough 1' }, { username: /string/ }]
  ]
  const [before] = await database.sql`select count(*)::int as n from users`
  for (const [payload, fields] of cases) {
    const res = await app.inject({ method: 'POST', url: '/v0/users', payload })
    t.equal(res.statusCode, 422, JSON.stringify(payload))
    t.match(res.json(), { id: 'unprocessable_entity', message: String, errors: Object }, JSON.stringify(payload))
    for (const [field, pattern] of Object.entries(fields)) t.match(res.json().errors[field]?.[0], pattern, `${field} of ${JSON.stringify(payload)}`)
  }
  const [after] = await database.sql`select count(*)::int as n from users`
  t.equal(after?.n, before?.n, 'nothing was written')
})

t.test('show by id or username; private fields only for the user and admins', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  for (const key of [String(owner.id), owner.username]) {
    const anon = await app.inject({ url: `/v0/users/${key}` })
    t.equal(anon.statusCode, 200)
    t.match(anon.json(), { id: owner.id, email: '[FILTERED]', legacy_api_key: '[FILTERED]', forwarding_token: '[FILTERED]' })
  }
  t.equal((await app.inject({ url: `/v0/users/${owner.id}`, headers: bearer(other.token) })).json().email, '[FILTERED]')
  const self = (await app.inject({ url: `/v0/users/${owner.id}`, headers: bearer(owner.token) })).json()
  t.equal(self.email, owner.email)
  t.type(self.legacy_api_key, 'string')
  t.equal(self.forwarding_token, null, 'a citizen has no forwarding token, and sees that')
  const byAdmin = (await app.inject({ url: `/v0/users/${owner.id}`, headers: bearer(admin.token) })).json()
  t.equal(byAdmin.email, owner.email)
  t.equal(byAdmin.forwarding_token, '[FILTERED]', 'forwarding secrets are the user\'s alone')
  t.match((await app.inject({ url: '/v0/users/nobody-here' })).json(), { id: 'record_not_found' })
  t.equal((await app.inject({ url: '/v0/users/999999' })).statusCode, 404)
})

t.test('lists paginate with Link, Total and Per-Page, and filter through the q[...] compiler', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const made = []
  for (let i = 0; i < 5; i++) made.push(await signUp(app, { username: `lister${i}`, email: `lister${i}@example.org`, city: i % 2 === 0 ? 'Graz' : 'Lyon' }))
  const page1 = await app.inject({ url: '/v0/users?per_page=2&q[username_start]=lister', headers: { host: 'api.example.org' } })
  t.equal(page1.statusCode, 200)
  t.equal(page1.headers.total, '5')
  t.equal(page1.headers['per-page'], '2')
  t.same(page1.json().map((u: { username: string }) => u.username), ['lister0', 'lister1'])
  const link = String(page1.headers.link)
  t.match(link, /<http:\/\/api\.example\.org\/v0\/users\?per_page=2&q%5Busername_start%5D=lister&page=3>; rel="last"/)
  t.match(link, /rel="next"/)
  t.notMatch(link, /rel="prev"/)
  const last = await app.inject({ url: '/v0/users?per_page=2&page=3&q[username_start]=lister' })
  t.same(last.json().map((u: { username: string }) => u.username), ['lister4'])
  t.notMatch(String(last.headers.link), /rel="next"/, 'no next on the last page')
  t.same((await app.inject({ url: '/v0/users?page=9&q[username_start]=lister' })).json(), [], 'a page out of range is empty')

  const filter = async (query: string): Promise<string[]> => (await app.inject({ url: `/v0/users?per_page=100&${query}` })).json().map((u: { username: string }) => u.username)
  t.same(await filter('q[username_eq]=lister3'), ['lister3'])
  t.same(await filter('q[username_cont]=STER2'), ['lister2'], 'cont is case-insensitive')
  t.same(await filter('q[city_eq]=Lyon'), ['lister1', 'lister3'])
  t.same(await filter('q[username_in]=lister1,lister4'), ['lister1', 'lister4'])
  t.same(await filter(`q[id_lt]=${made[2]?.id ?? 0}&q[username_start]=lister`), ['lister0', 'lister1'])
  t.same(await filter('q[username_start]=lister&q[sort]=id desc'), ['lister4', 'lister3', 'lister2', 'lister1', 'lister0'])
  t.same(await filter('q[username_start]=lister&q[s]=username+desc'), ['lister4', 'lister3', 'lister2', 'lister1', 'lister0'])
  t.same(await filter('q[username_start]=lister&q[city_null]=1'), [])
  t.same(await filter('q[username_start]=lister&q[username_eq]='), ['lister0', 'lister1', 'lister2', 'lister3', 'lister4'], 'blank values are ignored')
  t.same(await filter("q[username_eq]=x' or 1=1 --"), [], 'values are bound, never SQL')

  for (const bad of ['q[password_eq]=x', 'q[username_like]=x', 'q[role_eq]=admin', 'q[id_eq]=abc', 'q[sort]=password asc', 'q[sort]=id sideways', 'per_page=5000', 'page=0', 'page=abc', 'q[created_at_gt]=yesterday']) {
    const res = await app.inject({ url: `/v0/users?${bad}` })
    t.equal(res.statusCode, 400, bad)
    t.match(res.json(), { id: 'bad_request', message: String, errors: Object }, bad)
  }
  const unknown = await app.inject({ url: '/v0/users?q[password_eq]=x' })
  t.match(unknown.json().message, /allowed keys are .*username/, 'the 400 names the allowed keys')
  const admin = await signUpAs(harness, 'admin')
  t.equal((await app.inject({ url: '/v0/users?q[role_eq]=admin', headers: bearer(admin.token) })).statusCode, 200, 'role is an admin-only key')
})

t.test('roles: only admins change them, nobody their own; forwarding credentials come with the role', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const citizen = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const self = await app.inject({ method: 'PATCH', url: `/v0/users/${citizen.id}`, headers: bearer(citizen.token), payload: { role: 'admin', city: 'Porto' } })
  t.equal(self.statusCode, 200)
  t.match(self.json(), { role: 'citizen', location: { city: 'Porto' } }, 'role is dropped, the rest applies')
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/users/${citizen.id}`, headers: bearer(other.token), payload: { city: 'x' } })).statusCode, 403)
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/users/${citizen.id}`, payload: { city: 'x' } })).statusCode, 401)
  const promoted = await app.inject({ method: 'PUT', url: `/v0/users/${citizen.id}`, headers: bearer(admin.token), payload: { role: 'researcher' } })
  t.equal(promoted.statusCode, 200)
  t.equal(promoted.json().role, 'researcher')
  const mine = (await app.inject({ url: '/v0/me', headers: bearer(citizen.token) })).json()
  t.match(mine.forwarding_token, /^[\w-]{16}$/)
  t.match(mine.forwarding_username, /^[\w-]{16}$/)
  const bogus = await app.inject({ method: 'PATCH', url: `/v0/users/${citizen.id}`, headers: bearer(admin.token), payload: { role: 'superuser' } })
  t.equal(bogus.statusCode, 422)
  const own = await app.inject({ method: 'PATCH', url: `/v0/users/${admin.id}`, headers: bearer(admin.token), payload: { role: 'citizen' } })
  t.equal(own.statusCode, 422)
  t.match(own.json().errors.role[0], /own role/)
})

t.test('admins create accounts with a role; logged-in users may not set one', async (t) => {
  const harness = await buildApi(t)
  const admin = await signUpAs(harness, 'admin')
  const res = await harness.app.inject({ method: 'POST', url: '/v0/users', headers: bearer(admin.token), payload: { username: 'researcher1', email: 'r1@example.org', password: 'long enough 1', role: 'researcher' } })
  t.equal(res.statusCode, 201)
  t.equal(res.json().role, 'researcher')
  const [row] = await harness.database.sql`select forwarding_token from users where username = 'researcher1'`
  t.type(row?.forwarding_token, 'string')
})

t.test('deleting a user archives the account and its devices, and ends its tokens', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const user = await signUp(app)
  const other = await signUp(app)
  await makeDevice(database, { ownerId: user.id, name: 'kit', mac: '00:11:22:33:44:55', state: 'not_configured', token: null })
  t.equal((await app.inject({ method: 'DELETE', url: `/v0/users/${user.id}`, headers: bearer(other.token) })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/v0/users/${user.id}` })).statusCode, 401)
  const res = await app.inject({ method: 'DELETE', url: `/v0/users/${user.id}`, headers: bearer(user.token) })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { message: 'OK' })
  t.equal((await app.inject({ url: `/v0/users/${user.id}` })).statusCode, 404)
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode, 401)
  const [device] = await database.sql`select state, archived_at, mac_address, old_mac_address from devices where owner_id = ${user.id}`
  t.match(device, { state: 'archived', mac_address: null, old_mac_address: '00:11:22:33:44:55' })
  t.ok(device?.archived_at)
})
