import { gunzipSync } from 'node:zlib'
import t from 'tap'
import { DEVICE_TOKEN_NOT_SETTABLE, deviceService } from '@esp/domain'
import { bearer, buildApi, signUp, signUpAs } from '@esp/test-helpers/api'
import { buildPlatform } from '@esp/test-helpers/platform'

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/
const FIVE_DIGITS = (n: number): boolean => Math.abs(n * 1e5 - Math.round(n * 1e5)) < 1e-6

t.test('a new user creates a device, sees it, makes it private, deletes it', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')

  t.equal((await app.inject({ method: 'POST', url: '/v0/devices', payload: { name: 'x' } })).statusCode, 401, 'anonymous cannot add devices')
  const created = await app.inject({
    method: 'POST',
    url: '/v0/devices',
    headers: bearer(owner.token),
    payload: { name: 'Balcony', description: 'on the balcony', exposure: 'outdoor', latitude: 41.3887912, longitude: 2.1589934, mac_address: 'BD-B1-DE-13-67-31', state: 'has_published' }
  })
  t.equal(created.statusCode, 201)
  const device = created.json()
  t.equal(device.uuid, null, 'uuid is null in the creation response (contract)')
  t.match(device, {
    name: 'Balcony',
    state: 'never_published',
    mac_address: 'bd:b1:de:13:67:31',
    owner: { id: owner.id, username: owner.username },
    kit: { id: 26 },
    data_policy: { is_private: false, precise_location: true, enable_forwarding: false },
    notify: { low_battery: false, stopped_publishing: false },
    location: { latitude: 41.38879, longitude: 2.15899, city: 'Barcelona', country_code: 'ES', country: 'Spain', exposure: 'outdoor' },
    hardware: { name: 'Unknown', type: 'Unknown', slug: 'unknown', last_status_message: null }
  })
  t.same(device.system_tags, ['new', 'offline', 'outdoor'])
  t.match(device.device_token, /^[a-z0-9]{6}$/, 'a device token is issued and shown to the owner')
  t.equal(device.location.geohash.length, 10)
  t.ok(device.data.sensors.length > 0, 'the kit sensors are listed before any reading')
  t.ok(device.data.sensors.every((s: { value: unknown, raw_value: unknown, prev_value: unknown, tags: unknown }) => s.value === null && s.raw_value === null && s.prev_value === null && Array.isArray(s.tags)))
  t.match(device.created_at, TIMESTAMP)

  const anonymous = (await app.inject({ url: `/v0/devices/${device.id}` })).json()
  t.match(anonymous, { id: device.id, device_token: '[FILTERED]', mac_address: '[FILTERED]', hardware: { last_status_message: '[FILTERED]' } })
  t.match(anonymous.uuid, /^[0-9a-f-]{36}$/)
  t.equal((await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(admin.token) })).json().device_token, device.device_token, 'admins see the token')

  const list = await app.inject({ url: '/v0/devices' })
  t.ok(list.json().some((d: { id: number }) => d.id === device.id), 'in the list')
  const map = await app.inject({ url: '/v0/devices/world_map' })
  t.ok(map.json().some((d: { id: number }) => d.id === device.id), 'on the map')
  const found = await app.inject({ url: '/v0/search?q=balc' })
  t.ok(found.json().some((d: { id: number, type: string }) => d.id === device.id && d.type === 'Device'), 'in search by prefix')

  const patched = await app.inject({ method: 'PATCH', url: `/v0/devices/${device.id}`, headers: bearer(owner.token), payload: { is_private: true } })
  t.equal(patched.statusCode, 200)
  t.equal(patched.json().data_policy.is_private, true)
  t.equal((await app.inject({ url: `/v0/devices/${device.id}` })).statusCode, 404, 'anonymous: 404, as a missing device')
  t.equal((await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(other.token) })).statusCode, 404, 'another citizen: 404')
  t.equal((await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(owner.token) })).statusCode, 200, 'owner: 200')
  t.equal((await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(admin.token) })).statusCode, 200, 'admin: 200')
  t.equal((await app.inject({ url: `/v0/devices/${device.id}/readings?sensor_id=14` })).statusCode, 404, 'readings hidden')
  for (const [who, headers] of [['anonymous', {}], ['other', bearer(other.token)]] as const) {
    const ids = (url: string) => app.inject({ url, headers }).then((r) => r.json() as Array<{ id: number }>)
    t.notOk((await ids('/v0/devices')).some((d) => d.id === device.id), `${who}: not in the list`)
    t.notOk((await ids('/v0/devices/world_map')).some((d) => d.id === device.id), `${who}: not on the map`)
    t.notOk((await ids('/v0/devices/fresh_world_map')).some((d) => d.id === device.id), `${who}: not on the fresh map`)
    t.notOk((await ids('/v0/search?q=balcony')).some((d) => d.id === device.id), `${who}: not in search`)
    const profile = (await app.inject({ url: `/v0/users/${owner.id}`, headers })).json()
    t.same(profile.devices, [], `${who}: not in the owner's profile`)
  }
  t.ok((await app.inject({ url: '/v0/devices/fresh_world_map', headers: bearer(owner.token) })).json().some((d: { id: number }) => d.id === device.id), 'the owner sees it on the fresh map')
  t.ok((await app.inject({ url: '/v0/devices', headers: bearer(owner.token) })).json().some((d: { id: number }) => d.id === device.id), 'and in the list')
  const me = (await app.inject({ url: '/v0/me', headers: bearer(owner.token) })).json()
  t.match(me.devices[0], { id: device.id, name: 'Balcony', device_token: device.device_token, hardware: { type: 'Unknown' } }, 'a user holds full devices')

  t.equal((await app.inject({ method: 'DELETE', url: `/v0/devices/${device.id}`, headers: bearer(other.token) })).statusCode, 404, 'private: hidden from a stranger\'s DELETE too')
  const deleted = await app.inject({ method: 'DELETE', url: `/v0/devices/${device.id}`, headers: bearer(owner.token) })
  t.same([deleted.statusCode, deleted.body, deleted.headers['content-type']], [200, '', undefined], 'the contract: 200 with an empty body')
  t.equal((await app.inject({ url: `/v0/devices/${device.id}`, headers: bearer(owner.token) })).statusCode, 404, 'archived devices are gone')
  const [row] = await database.sql`select state, archived_at, mac_address, old_mac_address::text from devices where id = ${device.id}`
  t.match(row, { state: 'archived', mac_address: null, old_mac_address: 'bd:b1:de:13:67:31' })
  t.ok(row?.archived_at)
  t.equal((await app.inject({ method: 'POST', url: `/v0/devices/${device.id}/restore`, headers: bearer(owner.token) })).statusCode, 403, 'only admins restore')
  const restored = await app.inject({ method: 'POST', url: `/v0/devices/${device.id}/restore`, headers: bearer(admin.token) })
  t.match(restored.json(), { id: device.id, state: 'never_published', mac_address: 'bd:b1:de:13:67:31' })
})

t.test('bad device bodies get 4xx naming the field, and nothing is written', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const count = async () => Number((await database.sql`select count(*)::int as n from devices`)[0]?.n)
  const before = await count()
  const cases: Array<[unknown, number, string]> = [
    [{}, 422, 'name'],
    [{ name: '   ' }, 422, 'name'],
    [{ name: 'x', mac_address: 'nope' }, 422, 'mac_address'],
    [{ name: 'x', exposure: 'underwater' }, 422, 'exposure'],
    [{ name: 'x', latitude: 91, longitude: 0 }, 422, 'latitude'],
    [{ name: 'x', latitude: 'north', longitude: 0 }, 422, 'latitude'],
    [{ name: 'x', latitude: 10 }, 422, 'longitude'],
    [{ name: 'x', is_private: 'perhaps' }, 422, 'is_private'],
    [{ name: 'x', user_tags: 'NoSuchTag' }, 422, 'user_tags'],
    [{ name: 'x', kit_id: 999999 }, 422, 'kit_id'],
    [{ name: 'x', device_token: 'a/b#' }, 422, 'device_token'],
    [{ name: 'x'.repeat(300) }, 422, 'name'],
    [{ name: { first: 'x' } }, 422, 'name']
  ]
  for (const [payload, status, field] of cases) {
    const res = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: payload as object })
    t.equal(res.statusCode, status, JSON.stringify(payload))
    const body = res.json()
    t.match(body, { id: String, message: String }, 'the one error shape')
    t.ok(JSON.stringify(body.errors).includes(field), `names ${field}: ${JSON.stringify(body.errors)}`)
  }
  const malformed = await app.inject({ method: 'POST', url: '/v0/devices', headers: { ...bearer(owner.token), 'content-type': 'application/json' }, payload: '{"name":' })
  t.equal(malformed.statusCode, 400)
  t.equal(await count(), before, 'nothing was written')
  // Tokens are the platform's: a chosen one is refused whatever it is, taken or free (issue 34).
  const taken = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'a' } })
  t.equal(taken.statusCode, 201)
  for (const token of [taken.json().device_token as string, 'zz99zz']) {
    const chosen = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'b', device_token: token } })
    t.same([chosen.statusCode, chosen.json().errors], [422, { device_token: [DEVICE_TOKEN_NOT_SETTABLE] }], 'a chosen token is refused alike, taken or not')
  }
  t.equal((await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'blank', device_token: '' } })).statusCode, 201, 'a blank one is ignored')
  for (const id of ['0', '99999999', 'abc', '1e3']) {
    t.equal((await app.inject({ url: `/v0/devices/${id}` })).statusCode, 404, `GET /devices/${id}`)
  }
})

t.test('updates: owner or admin, roles for forwarding, tags, location blur, MAC takeover, automatic state', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const researcher = await signUpAs(harness, 'researcher')
  const admin = await signUpAs(harness, 'admin')
  for (const name of ['Barcelona', 'Research']) {
    const res = await app.inject({ method: 'POST', url: '/v0/tags', headers: bearer(admin.token), payload: { name, description: `${name} devices` } })
    t.equal(res.statusCode, 201, res.body)
  }
  const id = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'A' } })).json().id
  t.equal((await app.inject({ url: `/v0/devices/${id}` })).json().state, 'not_configured', 'no MAC: not_configured')
  const patch = async (token: string | null, payload: object) =>
    await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: token === null ? {} : bearer(token), payload })
  t.equal((await patch(null, { name: 'B' })).statusCode, 401)
  t.equal((await patch(other.token, { name: 'B' })).statusCode, 403)
  t.equal((await patch(owner.token, {})).statusCode, 200, 'an empty body is fine')
  const tagged = await patch(owner.token, { user_tags: 'Barcelona, Research', enable_forwarding: true, state: 'archived', mac_address: 'aa:bb:cc:dd:ee:ff' })
  t.match(tagged.json(), { user_tags: ['Barcelona', 'Research'], data_policy: { enable_forwarding: false }, state: 'never_published' }, 'citizens cannot enable forwarding; state is automatic')
  t.same((await patch(owner.token, { user_tags: '' })).json().user_tags, [], 'an empty string clears the tags')
  t.equal((await patch(owner.token, { user_tags: 'barcelona' })).statusCode, 422, 'tag names are case sensitive')
  t.equal((await patch(admin.token, { description: 'by admin' })).json().description, 'by admin', 'admins update any device')

  const own = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(researcher.token), payload: { name: 'R' } })).json()
  const forwarding = await app.inject({ method: 'PATCH', url: `/v0/devices/${own.id}`, headers: bearer(researcher.token), payload: { enable_forwarding: 'True', notify: { low_battery: true } } })
  t.match(forwarding.json(), { data_policy: { enable_forwarding: true }, notify: { low_battery: true } }, 'researchers may forward')

  const blurred = (await patch(owner.token, { latitude: 41.3887912, longitude: 2.1589934, precise_location: false })).json().location
  t.ok(blurred.latitude >= 41.38879 && blurred.latitude < 41.38979 + 1e-9, `blurred latitude ${blurred.latitude}`)
  t.ok(FIVE_DIGITS(blurred.latitude) && FIVE_DIGITS(blurred.longitude), 'still written with 5 digits')
  t.equal(blurred.city, 'Barcelona')
  const precise = (await patch(owner.token, { precise_location: true, location: { latitude: 52.3730796, longitude: 4.8924534 } })).json()
  t.match(precise.location, { latitude: 52.37307, longitude: 4.89245, country_code: 'NL', country: 'Netherlands' }, 'nested location, truncated')

  const second = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(other.token), payload: { name: 'new owner', mac_address: 'AA:BB:CC:DD:EE:FF' } })).json()
  t.equal(second.state, 'never_published')
  const taken = (await app.inject({ url: `/v0/devices/${id}`, headers: bearer(owner.token) })).json()
  t.match(taken, { mac_address: null, state: 'not_configured' }, 'the newest registration takes the MAC over')
})

t.test('lists: filters, sorting, near, with_tags, pagination headers', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const owner = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  await app.inject({ method: 'POST', url: '/v0/tags', headers: bearer(admin.token), payload: { name: 'Air' } })
  const make = async (payload: object) => (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload })).json()
  const bcn = await make({ name: 'alpha', latitude: 41.39, longitude: 2.17, user_tags: 'Air', mac_address: '00:11:22:33:44:55' })
  const mad = await make({ name: 'beta', latitude: 40.42, longitude: -3.7, exposure: 'indoor' })
  const ams = await make({ name: 'gamma', latitude: 52.37, longitude: 4.89 })
  const ids = async (url: string, token?: string) => {
    const res = await app.inject({ url, headers: token === undefined ? {} : bearer(token) })
    t.equal(res.statusCode, 200, url)
    return (res.json() as Array<{ id: number }>).map((d) => d.id)
  }
  t.same(await ids('/v0/devices?q[name_eq]=alpha'), [bcn.id])
  t.same(await ids('/v0/devices?q[name_cont]=ET'), [mad.id], 'cont ignores case')
  t.same(await ids(`/v0/devices?q[owner_id_eq]=${owner.id}&q[sort]=name desc`), [ams.id, mad.id, bcn.id])
  t.same(await ids(`/v0/devices?q[owner_username_eq]=${owner.username}&q[s]=name asc`), [bcn.id, mad.id, ams.id])
  t.same(await ids('/v0/devices?q[tags_name_in]=Air'), [bcn.id])
  t.same(await ids('/v0/devices?q[tag_name_eq]=Air'), [bcn.id])
  t.same(await ids('/v0/devices?with_tags=Nothing|Air'), [bcn.id])
  t.same(await ids('/v0/devices?q[exposure_eq]=indoor'), [mad.id])
  t.same(await ids(`/v0/devices?q[id_in][]=${mad.id}&q[id_in][]=${ams.id}`), [mad.id, ams.id])
  t.same(await ids(`/v0/devices?q[id_lt]=${mad.id}&q[owner_id_eq]=${owner.id}`), [bcn.id])
  t.same(await ids('/v0/devices?q[postprocessing_id_not_null]=1'), [])
  t.same(await ids('/v0/devices?near=41.38,2.16&q[owner_id_eq]=' + owner.id), [bcn.id, mad.id], 'nearest first, within 1000 km')
  t.same(await ids('/v0/devices?near=41.38,2.16&within=5000&q[owner_id_eq]=' + owner.id), [bcn.id, mad.id, ams.id])
  t.same(await ids('/v0/devices?q[mac_address_eq]=00:11:22:33:44:55', admin.token), [bcn.id], 'admins filter on secrets')
  for (const [url, pattern] of [
    ['/v0/devices?near=north', /near/],
    ['/v0/devices?near=91,0', /near/],
    ['/v0/devices?q[mac_address_eq]=00:11:22:33:44:55', /allowed keys/],
    ['/v0/devices?q[color_eq]=red', /allowed keys are .*name/],
    ['/v0/devices?q[name_like]=x', /matchers are/],
    ['/v0/devices?q[id_eq]=one', /integer/],
    ['/v0/devices?q[created_at_gt]=yesterday', /date/],
    ['/v0/devices?q[sort]=password asc', /sort/],
    ['/v0/devices?per_page=0', /per_page/],
    ['/v0/devices?page=-1', /page/]
  ] as const) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 400, url)
    t.match(res.json().message, pattern, url)
  }
  const page = await app.inject({ url: `/v0/devices?q[owner_id_eq]=${owner.id}&per_page=1&page=2&q[name_in]=alpha,beta,gamma` })
  t.equal(page.headers.total, '3')
  t.equal(page.headers['per-page'], '1')
  const link = String(page.headers.link)
  for (const rel of ['first', 'prev', 'last', 'next']) t.match(link, new RegExp(`rel="${rel}"`))
  t.notMatch(link.split(', ').join(' '), /alpha,beta/, 'commas inside URLs are percent-encoded')
  t.match(link, /^<http:\/\/[^>]+\/v0\/devices\?/, 'absolute URLs')
  t.same(await ids(`/v0/devices?q[owner_id_eq]=${owner.id}&page=9`), [], 'past the end: empty')
})

t.test('world map: contract and client fields, ETag, compression, fresh after a reading', async (t) => {
  const harness = await buildPlatform(t)
  const { app } = harness
  const owner = await signUp(app)
  const device = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'mapped', latitude: 41.39, longitude: 2.17, exposure: 'indoor' } })).json()
  await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'nowhere' } })
  const first = await app.inject({ url: '/v0/devices/world_map' })
  t.equal(first.statusCode, 200)
  const items = first.json() as Array<Record<string, unknown>>
  t.same(items.map((i) => i.name), ['mapped'], 'only located devices')
  t.match(items[0], {
    id: device.id,
    owner_id: owner.id,
    owner_username: owner.username,
    latitude: 41.39,
    longitude: 2.17,
    kit_id: 26,
    state: 'not_configured',
    exposure: 'indoor',
    user_tags: [],
    location: { latitude: 41.39, longitude: 2.17, exposure: 'indoor', city: 'Barcelona', country: 'Spain' },
    hardware: { name: 'Unknown', type: 'Unknown', slug: 'unknown', last_status_message: '[FILTERED]' },
    data: {}
  })
  t.same(items[0]?.system_tags, ['indoor', 'new', 'offline'])
  const etag = String(first.headers.etag)
  t.equal((await app.inject({ url: '/v0/devices/world_map', headers: { 'if-none-match': etag } })).statusCode, 304)
  const zipped = await app.inject({ url: '/v0/devices/world_map', headers: { 'accept-encoding': 'gzip' } })
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.same(JSON.parse(gunzipSync(zipped.rawPayload).toString()), items)
  t.equal((await app.inject({ url: '/v0/devices/world_map', headers: { 'accept-encoding': 'br;q=0, gzip' } })).headers['content-encoding'], 'gzip', 'q=0 refuses an encoding')
  const hidden = await app.inject({ method: 'PATCH', url: `/v0/devices/${device.id}`, headers: bearer(owner.token), payload: { is_private: true } })
  t.equal(hidden.statusCode, 200)
  t.same((await app.inject({ url: '/v0/devices/world_map' })).json(), [], 'made private: gone from the next map at once')
  await app.inject({ method: 'PATCH', url: `/v0/devices/${device.id}`, headers: bearer(owner.token), payload: { is_private: false } })

  const posted = await app.inject({
    method: 'POST',
    url: `/v0/devices/${device.id}/readings`,
    headers: bearer(owner.token),
    payload: { data: [{ recorded_at: new Date(Date.now() - 60_000).toISOString(), sensors: [{ id: 14, value: 21.5 }] }] }
  })
  t.ok(posted.statusCode === 200 || posted.statusCode === 201, posted.body)
  // A reading rebuilds the map in the background; the next renderings carry it.
  let after = await app.inject({ url: '/v0/devices/world_map', headers: { 'if-none-match': etag } })
  for (let i = 0; i < 50 && after.statusCode === 304; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    after = await app.inject({ url: '/v0/devices/world_map', headers: { 'if-none-match': etag } })
  }
  t.equal(after.statusCode, 200, 'a reading changes the map')
  t.match(after.json()[0], { state: 'has_published', data: { 14: 21.5, '14_raw': 21.5 }, system_tags: ['indoor', 'new', 'online'] })
  const shown = (await app.inject({ url: `/v0/devices/${device.id}` })).json()
  t.match(shown.data.sensors.find((s: { id: number }) => s.id === 14), { value: 21.5, raw_value: 21.5, prev_value: null })
  t.match(shown, { state: 'has_published', status: 'online' })
})

t.test('device tokens: made by the platform and never chosen; the owner or an admin issues a new one', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const create = async (token: string, body: object): Promise<{ id: number, device_token: string }> =>
    (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(token), payload: body })).json()
  const mine = await create(owner.token, { name: 'Mine' })
  const theirs = await create(other.token, { name: 'Theirs', is_private: true })
  t.match(theirs.device_token, /^[a-z0-9]{6}$/, 'the firmware form: six lower-case letters and digits')

  // Another device's token and a free one get the same answer: nothing tells that one exists.
  const answers = []
  for (const method of ['PATCH', 'PUT'] as const) {
    for (const guess of [theirs.device_token, 'qq11qq']) {
      const res = await app.inject({ method, url: `/v0/devices/${mine.id}`, headers: bearer(owner.token), payload: { device_token: guess } })
      answers.push([res.statusCode, res.body.replace(guess, '<guess>')])
      t.same([res.statusCode, res.json().errors], [422, { device_token: [DEVICE_TOKEN_NOT_SETTABLE] }], `${method} with a chosen token is refused`)
    }
  }
  t.equal(new Set(answers.map((a) => JSON.stringify(a))).size, 1, 'one answer for a taken token and a free one')
  const nested = await app.inject({ method: 'PATCH', url: `/v0/devices/${mine.id}`, headers: bearer(owner.token), payload: { device: { device_token: 'abcdef' } } })
  t.equal(nested.statusCode, 422, 'the Rails-style wrapper too')
  t.equal((await app.inject({ url: `/v0/devices/${mine.id}`, headers: bearer(owner.token) })).json().device_token, mine.device_token, 'the token did not change')

  const renewed = await app.inject({ method: 'POST', url: `/v0/devices/${mine.id}/device_token`, headers: bearer(owner.token) })
  t.equal(renewed.statusCode, 200, renewed.body)
  const fresh: string = renewed.json().device_token
  t.match(fresh, /^[a-z0-9]{6}$/, 'a new token of the firmware form')
  t.not(fresh, mine.device_token, 'not the old one')
  t.equal((await app.inject({ url: `/v0/devices/${mine.id}`, headers: bearer(owner.token) })).json().device_token, fresh, 'the device holds it')
  t.equal((await database.sql`select 1 from devices where device_token = ${mine.device_token}`).length, 0, 'the old token names no device any more')

  const ask = async (token: string | undefined, id: number): Promise<number> =>
    (await app.inject({ method: 'POST', url: `/v0/devices/${id}/device_token`, headers: token === undefined ? {} : bearer(token) })).statusCode
  t.same([await ask(undefined, mine.id), await ask(other.token, mine.id), await ask(admin.token, mine.id)], [401, 403, 200], 'anonymous 401, another user 403, an admin 200')
  t.equal(await ask(owner.token, theirs.id), 404, "someone else's private device is a device that does not exist")
  t.equal(await ask(owner.token, 987654321), 404, 'as is a missing id')

  const issued = new Set<string>()
  for (let i = 0; i < 40; i++) issued.add((await app.inject({ method: 'POST', url: `/v0/devices/${mine.id}/device_token`, headers: bearer(owner.token) })).json().device_token)
  t.equal(issued.size, 40, 'every new token differs')

  // A clash with another device's token is retried inside, never answered.
  const tries = [theirs.device_token, theirs.device_token, 'zx81zx']
  const row = await deviceService.withFreshToken(async (token) => (await database.sql<{ device_token: string }[]>`
    update devices set device_token = ${token} where id = ${mine.id} returning device_token`)[0], () => tries.shift() ?? 'none')
  t.equal(row?.device_token, 'zx81zx', 'two clashes, then a free token')

  // Devices from before keep their tokens of the older forms (4 to 64 characters).
  await database.sql`update devices set device_token = 'older-form-token-1234' where id = ${mine.id}`
  t.equal((await app.inject({ url: `/v0/devices/${mine.id}`, headers: bearer(owner.token) })).json().device_token, 'older-form-token-1234', 'an older token is kept as it is')
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/devices/${mine.id}`, headers: bearer(owner.token), payload: { name: 'Renamed' } })).json().device_token, 'older-form-token-1234', 'and survives other changes')
})
