import t from 'tap'
import { bearer, buildApi, signUp, signUpAs } from '@esp/test-helpers/api'

t.test('sensors, measurements and kits: public reads, admin writes', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const citizen = await signUp(app)
  const admin = await signUpAs(harness, 'admin')

  const list = await app.inject({ url: '/v0/sensors?per_page=5' })
  t.equal(list.statusCode, 200)
  t.equal(list.json().length, 5)
  t.equal(list.headers['per-page'], '5')
  t.ok(Number(list.headers.total) > 100, 'the real catalogue is seeded')
  const dht = (await app.inject({ url: '/v0/sensors/3' })).json()
  t.match(dht, { id: 3, parent_id: null, tags: [], measurement: null })
  t.same(Object.keys((await app.inject({ url: '/v0/sensors/14' })).json()).slice(0, 6), ['id', 'uuid', 'parent_id', 'ancestry', 'name', 'description'])
  t.equal((await app.inject({ url: '/v0/sensors/999999' })).statusCode, 404)
  t.equal((await app.inject({ url: '/v0/sensors/abc' })).statusCode, 404)
  const all = (await app.inject({ url: '/v0/sensors?per_page=1000' })).json().map((s: { id: number }) => s.id)
  t.same((await app.inject({ url: '/v0/sensors?q[id_lt]=10&per_page=1000' })).json().map((s: { id: number }) => s.id), all.filter((id: number) => id < 10))
  t.equal((await app.inject({ url: '/v0/sensors?q[secret_eq]=1' })).statusCode, 400)

  const measurement = (await app.inject({ url: '/v0/measurements/1' })).json()
  t.same(Object.keys(measurement), ['id', 'uuid', 'name', 'description', 'definition', 'created_at', 'updated_at'])

  const body = { name: 'Test sensor', description: 'a sensor', unit: 'ppm', measurement_id: measurement.id, parent_id: 3 }
  t.equal((await app.inject({ method: 'POST', url: '/v0/sensors', payload: body })).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url: '/v0/sensors', headers: bearer(citizen.token), payload: body })).statusCode, 403)
  const bad = await app.inject({ method: 'POST', url: '/v0/sensors', headers: bearer(admin.token), payload: { unit: 'x', measurement_id: 999999, equation: 'x +* 2' } })
  t.equal(bad.statusCode, 422)
  t.match(Object.keys(bad.json().errors).sort(), ['description', 'equation', 'measurement_id', 'name'])
  const created = await app.inject({ method: 'POST', url: '/v0/sensors', headers: bearer(admin.token), payload: body })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { name: 'Test sensor', parent_id: 3, ancestry: '3', measurement: { id: measurement.id, name: measurement.name } })
  const children = (await app.inject({ url: '/v0/sensors?q[parent_id_eq]=3' })).json() as Array<{ id: number, parent_id: number }>
  t.ok(children.some((s) => s.id === created.json().id) && children.every((s) => s.parent_id === 3), 'sub-sensors through parent_id')
  const renamed = await app.inject({ method: 'PATCH', url: `/v0/sensors/${created.json().id}`, headers: bearer(admin.token), payload: { name: 'Renamed' } })
  t.equal(renamed.json().name, 'Renamed')
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/sensors/${created.json().id}`, headers: bearer(citizen.token), payload: { name: 'x' } })).statusCode, 403)
  t.equal((await app.inject({ method: 'DELETE', url: `/v0/sensors/${created.json().id}`, headers: bearer(admin.token) })).statusCode, 404, 'sensors are never deleted')

  const m = await app.inject({ method: 'POST', url: '/v0/measurements', headers: bearer(admin.token), payload: { name: 'radon', description: 'Radon gas' } })
  t.equal(m.statusCode, 201)
  const dup = await app.inject({ method: 'POST', url: '/v0/measurements', headers: bearer(admin.token), payload: { name: 'radon', description: 'again' } })
  t.same([dup.statusCode, dup.json().errors], [422, { name: ['has already been taken'] }])

  const kits = await app.inject({ url: '/v0/kits?per_page=100' })
  t.equal(kits.statusCode, 200)
  const kit = kits.json().find((k: { id: number }) => k.id === 26)
  t.ok(kit.sensors.length > 5, 'kits list their sensors')
  t.ok(kit.sensors.every((s: { key: string, measurement: unknown }) => typeof s.key === 'string' && 'measurement' in s))
  t.same((await app.inject({ url: '/v0/kits/26' })).json().sensors, kit.sensors)
  const [count] = await database.sql`select count(*)::int as n from sensors where name = 'Test sensor'`
  t.equal(count?.n, 0)
})

t.test('tags and tag sensors', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const citizen = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  t.equal((await app.inject({ method: 'POST', url: '/v0/tags', headers: bearer(citizen.token), payload: { name: 'Air' } })).statusCode, 403)
  const tag = (await app.inject({ method: 'POST', url: '/v0/tags', headers: bearer(admin.token), payload: { name: 'Air', description: 'air quality' } })).json()
  t.match(tag, { name: 'Air', description: 'air quality' })
  const dup = await app.inject({ method: 'POST', url: '/v0/tags', headers: bearer(admin.token), payload: { name: 'AIR' } })
  t.same([dup.statusCode, dup.json().errors], [422, { name: ['has already been taken'] }], 'names are unique regardless of case')
  t.equal((await app.inject({ url: '/v0/tags/Air' })).json().id, tag.id, 'by name')
  t.equal((await app.inject({ url: '/v0/tags?per_page=200' })).json().length, 1)
  const device = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(citizen.token), payload: { name: 'd', user_tags: 'Air' } })).json()
  t.same(device.user_tags, ['Air'])
  t.same((await app.inject({ method: 'DELETE', url: `/v0/tags/${tag.id}`, headers: bearer(admin.token) })).json(), { message: 'OK' })
  t.same((await app.inject({ url: `/v0/devices/${device.id}` })).json().user_tags, [], 'a deleted tag leaves its devices')

  const ts = await app.inject({ method: 'POST', url: '/v0/tag_sensors', headers: bearer(admin.token), payload: { name: 'raw', description: 'uncalibrated' } })
  t.equal(ts.statusCode, 201)
  t.same(Object.keys(ts.json()), ['id', 'name', 'description', 'created_at', 'updated_at'])
  t.equal((await app.inject({ method: 'POST', url: '/v0/tag_sensors', headers: bearer(admin.token), payload: {} })).statusCode, 422)
  t.equal((await app.inject({ url: `/v0/tag_sensors/${ts.json().id}` })).json().name, 'raw')
  t.equal((await app.inject({ url: '/v0/components' })).statusCode, 404, 'components stay internal')
})

t.test('experiments: owner writes, derived active, private devices hidden', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const visible = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'pub' } })).json()
  const hidden = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'priv', is_private: true } })).json()

  t.equal((await app.inject({ method: 'POST', url: '/v0/experiments', payload: { name: 'x' } })).statusCode, 401)
  const refused = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(other.token), payload: { name: 'x', device_ids: [hidden.id] } })
  t.equal(refused.statusCode, 422, 'another user cannot add a private device')
  const bad = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { starts_at: 'soon', ends_at: '2020-01-01' } })
  t.equal(bad.statusCode, 422)
  t.match(Object.keys(bad.json().errors).sort(), ['name', 'starts_at'])
  const order = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { name: 'x', starts_at: '2030-01-01', ends_at: '2020-01-01' } })
  t.same(order.json().errors, { ends_at: ['is before starts_at'] })

  const created = await app.inject({ method: 'POST', url: '/v0/experiments', headers: bearer(owner.token), payload: { name: 'Noise', starts_at: '2020-01-01T00:00:00Z', device_ids: [visible.id, hidden.id] } })
  t.equal(created.statusCode, 201)
  t.match(created.json(), { name: 'Noise', owner_id: owner.id, active: true, starts_at: '2020-01-01T00:00:00Z', ends_at: null, device_ids: [visible.id, hidden.id] })
  const id = created.json().id
  t.same((await app.inject({ url: `/v0/experiments/${id}` })).json().device_ids, [visible.id], 'others do not see private devices')
  t.same((await app.inject({ url: `/v0/experiment/${id}`, headers: bearer(owner.token) })).json().device_ids, [visible.id, hidden.id], 'the older path; the owner sees all')
  t.same((await app.inject({ url: `/v0/devices/${visible.id}` })).json().experiment_ids, [id])
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/experiments/${id}`, headers: bearer(other.token), payload: { name: 'y' } })).statusCode, 403)
  const ended = await app.inject({ method: 'PATCH', url: `/v0/experiments/${id}`, headers: bearer(owner.token), payload: { ends_at: '2021-01-01' } })
  t.equal(ended.json().active, false, 'active is derived')
  t.same((await app.inject({ url: '/v0/experiments?q[owner_id_eq]=' + owner.id })).json().map((e: { id: number }) => e.id), [id])
  t.same((await app.inject({ method: 'DELETE', url: `/v0/experiments/${id}`, headers: bearer(admin.token) })).json(), { message: 'OK' })
  t.equal((await app.inject({ url: `/v0/experiments/${id}` })).statusCode, 404)
})

t.test('search: ranked, prefix, accents folded, privacy-aware, q required', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const owner = await signUp(app, { username: 'zoëmaker', city: 'Málaga' })
  const other = await signUp(app)
  await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'Terrace station', description: 'noise and air' } })
  const hidden = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'Terrace secret', is_private: true } })).json()
  const find = async (q: string, token?: string) => (await app.inject({ url: `/v0/search?q=${encodeURIComponent(q)}`, headers: token === undefined ? {} : bearer(token) })).json() as Array<Record<string, unknown>>
  const anonymous = await find('terr')
  t.same(anonymous.map((r) => r.name), ['Terrace station'])
  t.match(anonymous[0], { type: 'Device', owner_username: 'zoëmaker', url: /\/v0\/devices\/\d+$/ })
  t.same((await find('terr', owner.token)).map((r) => r.name).sort(), ['Terrace secret', 'Terrace station'], 'the owner finds their private device')
  t.notOk((await find('secret', other.token)).some((r) => r.id === hidden.id))
  t.match((await find('zoe')), [{ type: 'User', username: 'zoëmaker', profile_picture: '' }], 'accents folded')
  t.match((await find('malaga')), [{ type: 'User' }], 'by city')
  t.same(await find("'); drop table devices; --"), [], 'hostile text is only words')
  const missing = await app.inject({ url: '/v0/search' })
  t.equal(missing.statusCode, 400)
  t.equal(missing.json().id, 'parameter_missing')
})
