import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { explorerDist } from '@esp/explorer'
import type { LightMyRequestResponse } from 'fastify'
import { bearer, buildApi, signUp, signUpAs } from '@esp/test-helpers/api'
import { buildPlatform } from '@esp/test-helpers/platform'

// `pnpm test` builds the explorer before any file runs (scripts/run-tests.ts).
const explorer = { dir: explorerDist, tileUrl: 'https://{s}.tile.example.org/{z}/{x}/{y}.png', tileAttribution: '© "Example" <tiles>' }
const assets = readdirSync(path.join(explorerDist, 'assets'))
// The current build's script, as its page names it: assets/ keeps earlier builds' for a day.
const script = /\/explorer\/assets\/(index-[\w-]+\.js)/.exec(readFileSync(path.join(explorerDist, 'index.html'), 'utf8'))?.[1] ?? ''

t.test('browsers asking for / or /v0/ are sent to the explorer; everyone else gets the links', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer } })
  const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
  for (const url of ['/', '/v0/', '/v0']) {
    const sent = await app.inject({ url, headers: { accept: browser } })
    t.equal(sent.statusCode, 302, `${url} for a browser`)
    t.equal(sent.headers.location, '/explorer/')
    t.match(sent.headers.vary, /Accept/)
  }
  for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html', 'application/vnd.smartcitizen; version=0']) {
    const links = await app.inject({ url: '/', headers: accept === undefined ? {} : { accept } })
    t.equal(links.statusCode, 200, `Accept: ${accept ?? '(none)'} gets JSON`)
    t.type(links.json().devices_url, 'string')
  }
  // Without an explorer to serve, nobody is redirected.
  const { app: bare } = await buildApi(t)
  t.equal((await bare.inject({ url: '/', headers: { accept: browser } })).statusCode, 200)
})

t.test('the page: every app path is index.html with the settings written in and a strict policy', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer } })
  for (const url of ['/explorer', '/explorer/', '/explorer/devices/12', '/explorer/my/devices?x=1']) {
    const page = await app.inject({ url })
    t.equal(page.statusCode, 200, url)
    t.match(page.headers['content-type'], /^text\/html/)
    t.equal(page.headers['cache-control'], 'no-cache', 'the page is revalidated: it names the current assets')
    t.match(page.body, `/explorer/assets/${script}`)
  }
  const page = await app.inject({ url: '/explorer/' })
  const policy = String(page.headers['content-security-policy'])
  t.match(policy, "script-src 'self'", 'scripts only from here')
  t.match(policy, "frame-ancestors 'none'")
  t.match(policy, 'img-src \'self\' data: blob: https://*.tile.example.org', 'and the configured tile server\'s images')
  const meta = /<meta name="esp-config" content="([^"]*)">/.exec(page.body)?.[1] ?? ''
  const settings = JSON.parse(meta.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')) as Record<string, unknown>
  t.same(settings, { tileUrl: explorer.tileUrl, tileAttribution: explorer.tileAttribution, mqttPath: '/mqtt' }, 'the settings, escaped into the attribute')
  t.notMatch(meta, /[<>"]/, 'nothing in them can end the attribute')
})

t.test('assets: cached for good, sent compressed, and nothing outside assets/', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer } })
  const original = readFileSync(path.join(explorerDist, 'assets', script))
  const br = await app.inject({ url: `/explorer/assets/${script}`, headers: { 'accept-encoding': 'br, gzip' } })
  t.equal(br.statusCode, 200)
  t.equal(br.headers['cache-control'], 'public, max-age=31536000, immutable', 'named by content hash, so immutable')
  t.equal(br.headers['content-encoding'], 'br')
  t.ok(brotliDecompressSync(br.rawPayload).equals(original), 'brotli of the built file')
  const gz = await app.inject({ url: `/explorer/assets/${script}`, headers: { 'accept-encoding': 'gzip' } })
  t.equal(gz.headers['content-encoding'], 'gzip')
  t.ok(gunzipSync(gz.rawPayload).equals(original), 'gzip of the built file')
  const plain = await app.inject({ url: `/explorer/assets/${script}` })
  t.ok(plain.rawPayload.equals(original), 'and the file itself to a client that takes neither')
  const json = assets.find((f) => f.endsWith('.json')) ?? ''
  t.equal((await app.inject({ url: `/explorer/assets/${json}` })).statusCode, 200, 'a .json asset keeps its name (no version rewriting)')

  for (const url of ['/explorer/assets/nope.js', '/explorer/assets/..%2F..%2Fpackage.json', '/explorer/assets/.build-stamp', '/explorer/favicon.ico']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404, `${url} is not found`)
    t.match(res.json(), { id: 'not_found' }, 'in the one error shape')
  }
})

t.test('loading the explorer does not use up the API rate limit', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer }, server: { rateLimit: { perMinute: 3 } } })
  for (let i = 0; i < 10; i++) {
    t.equal((await app.inject({ url: '/explorer/' })).statusCode, 200)
    t.equal((await app.inject({ url: `/explorer/assets/${script}` })).statusCode, 200)
  }
  const calls = []
  for (let i = 0; i < 4; i++) calls.push((await app.inject({ url: '/v0/sensors' })).statusCode)
  t.same(calls, [200, 200, 200, 429], 'the API counts its own calls only')
})

/** A device of the compact map, decoded as its OpenAPI description says. */
interface Decoded { id: number, latitude: number, longitude: number, condition: string, exposure: string, name: string, value?: number | null }

/** The compact map's columns as devices, checking that every column has `count` items. */
function decodeCompact (body: { count: number, id: number[], lat: number[], lng: number[], condition: string, exposure: string, name: string[], value?: Array<number | null> }): Decoded[] {
  const { count } = body
  for (const column of [body.id, body.lat, body.lng, body.condition, body.exposure, body.name, ...(body.value === undefined ? [] : [body.value])]) {
    if (column.length !== count) throw new Error(`a column of ${column.length} items, not ${count}`)
  }
  let id = 0
  return body.id.map((delta, i) => {
    id += delta
    const device: Decoded = { id, latitude: (body.lat[i] ?? NaN) / 1e5, longitude: (body.lng[i] ?? NaN) / 1e5, condition: body.condition[i] ?? '', exposure: body.exposure[i] ?? '', name: body.name[i] ?? '' }
    if (body.value !== undefined) device.value = body.value[i] ?? null
    return device
  })
}

interface WorldMapItem { id: number, name: string, latitude: number, longitude: number, exposure: string | null, system_tags: string[], last_reading_at: string | null }

/** What the compact map must say of a device of the world map: the explorer's conditionOf, and the exposure as system_tags have it. */
const expected = (d: WorldMapItem): Decoded => ({
  id: d.id,
  latitude: d.latitude,
  longitude: d.longitude,
  condition: d.last_reading_at === null ? 'n' : d.system_tags.includes('online') ? 'o' : 'f',
  exposure: d.system_tags.includes('indoor') ? 'i' : 'o',
  name: d.name
})

t.test('the compact map: the world map\'s devices in columns, for whoever asks, fresh by the revisions', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const create = async (token: string, body: object): Promise<number> => {
    const res = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(token), payload: body })
    if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`)
    return res.json().id as number
  }
  const post = async (id: number, token: string, minutesAgo: number, sensors: object[]): Promise<void> => {
    const res = await app.inject({ method: 'POST', url: `/v0/devices/${id}/readings`, headers: bearer(token), payload: { data: [{ recorded_at: new Date(Date.now() - minutesAgo * 60_000).toISOString(), sensors }] } })
    if (res.statusCode >= 300) throw new Error(`${res.statusCode} ${res.body}`)
  }
  const online = await create(owner.token, { name: 'Balcony', latitude: 41.38879, longitude: 2.15899, exposure: 'outdoor' })
  const fresh = await create(owner.token, { name: 'Kitchen', latitude: 41.4, longitude: 2.19, exposure: 'indoor' })
  const offline = await create(other.token, { name: 'Roof "top" <b>', latitude: -33.86785, longitude: 151.20732 })
  const mine = await create(owner.token, { name: 'Hidden', latitude: 40.41678, longitude: -3.70379, is_private: true })
  const theirs = await create(other.token, { name: 'Theirs', latitude: 48.85661, longitude: 2.35222, is_private: true })
  await create(owner.token, { name: 'Nowhere' })
  await post(online, owner.token, 1, [{ id: 55, value: 21.5 }, { id: 14, value: 300 }])
  await post(offline, other.token, 120, [{ id: 55, value: 9.25 }])
  // A second sensor of the same measurement (temperature) with a newer value: the newest is shown.
  await database.sql`insert into latest_readings (device_id, sensor_id, recorded_at, value, raw_value) values (${online}, 79, now(), 22.75, 22.75)`

  const get = async (url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> => await app.inject({ url, headers })
  const compact = async (headers: Record<string, string> = {}, query = ''): Promise<Decoded[]> => {
    const res = await get(`/v0/devices/compact_map${query}`, headers)
    if (res.statusCode !== 200) throw new Error(`compact_map${query}: ${res.statusCode} ${res.body}`)
    return decodeCompact(res.json())
  }
  const worldMap = async (url: string, headers: Record<string, string> = {}): Promise<Decoded[]> =>
    ((await get(url, headers)).json() as WorldMapItem[]).map(expected).sort((a, b) => a.id - b.id)

  const anonymous = await compact()
  t.same(anonymous, await worldMap('/v0/devices/world_map'), 'anonymous: exactly the world map\'s devices, positions, conditions, exposures and names')
  t.same(anonymous.map((d) => [d.id, d.condition, d.exposure]), [[online, 'o', 'o'], [fresh, 'n', 'i'], [offline, 'f', 'o']], 'online, new and offline; outdoors, indoors and outdoors by default')
  t.same(anonymous[0], { id: online, latitude: 41.38879, longitude: 2.15899, condition: 'o', exposure: 'o', name: 'Balcony' }, 'positions of 5 digits exactly')
  t.same(await compact(bearer(other.token)), await worldMap('/v0/devices/fresh_world_map', bearer(other.token)), 'another user: the fresh map, with their own private device')
  t.same(await compact(bearer(owner.token)), await worldMap('/v0/devices/fresh_world_map', bearer(owner.token)), 'the owner: with theirs')
  t.ok((await compact(bearer(owner.token))).some((d) => d.id === mine), 'the owner sees their private device')
  t.notOk((await compact(bearer(owner.token))).some((d) => d.id === theirs), 'and not another\'s')
  t.notOk(anonymous.some((d) => d.id === mine || d.id === theirs), 'anonymous: no private device')
  t.same((await compact(bearer(admin.token))).map((d) => d.id), [online, fresh, offline, mine, theirs], 'an admin: every private device too')

  // Validators, encodings and caching, as the world map's.
  const first = await get('/v0/devices/compact_map')
  const etag = String(first.headers.etag)
  t.equal(first.headers['cache-control'], 'public, max-age=30')
  t.equal((await get('/v0/devices/compact_map', bearer(owner.token))).headers['cache-control'], 'private, no-cache', 'signed in: private')
  t.equal((await get('/v0/devices/compact_map', { 'if-none-match': etag })).statusCode, 304, 'ETag: 304')
  t.not((await get('/v0/devices/compact_map', bearer(owner.token))).headers.etag, etag, 'the owner\'s map has its own ETag')
  const zipped = await get('/v0/devices/compact_map', { 'accept-encoding': 'gzip' })
  t.equal(zipped.headers['content-encoding'], 'gzip')
  t.match(zipped.headers.vary, /accept-encoding/)
  t.same(JSON.parse(gunzipSync(zipped.rawPayload).toString()), first.json(), 'gzip of the same body')
  const brotli = await get('/v0/devices/compact_map', { 'accept-encoding': 'br, gzip' })
  t.same(JSON.parse(brotliDecompressSync(brotli.rawPayload).toString()), first.json(), 'br of the same body')

  // Coloured by a measurement: temperature (1), light (3), one without readings here (4, noise).
  const temperature = await compact({}, '?measurement=1')
  t.same(temperature.map((d) => [d.id, d.value]), [[online, 22.75], [fresh, null], [offline, 9.25]], 'each device\'s latest value of it, the newest of its sensors; null when none')
  const columns = (d: Decoded): unknown[] => [d.id, d.latitude, d.longitude, d.condition, d.exposure, d.name]
  t.same(temperature.map(columns), anonymous.map(columns), 'beside the same columns')
  t.match((await get('/v0/devices/compact_map?measurement=1')).json(), { measurement: 1 })
  t.same((await compact({}, '?measurement=3')).map((d) => d.value), [300, null, null])
  t.same((await compact({}, '?measurement=4')).map((d) => d.value), [null, null, null], 'a measurement without readings: nulls')
  t.same((await compact(bearer(owner.token), '?measurement=1')).map((d) => d.id), [online, fresh, offline, mine], 'with the viewer\'s private devices too')
  for (const bad of ['999999', 'abc', '-1']) {
    const res = await get(`/v0/devices/compact_map?measurement=${bad}`)
    t.equal(res.statusCode, 404, `measurement=${bad}: no such measurement`)
    t.match(res.json(), { id: 'record_not_found', message: String, errors: null }, 'in the one error shape')
  }

  // Changes: what hides a device or renames it is on the next answer; a reading within a rebuild.
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/devices/${offline}`, headers: bearer(other.token), payload: { is_private: true } })).statusCode, 200)
  t.same((await compact()).map((d) => d.id), [online, fresh], 'made private: gone from the next anonymous map')
  t.ok((await compact(bearer(other.token))).some((d) => d.id === offline), 'still on its owner\'s')
  t.equal((await app.inject({ method: 'PATCH', url: `/v0/devices/${fresh}`, headers: bearer(owner.token), payload: { name: 'Kitchen sill' } })).statusCode, 200)
  t.equal((await compact()).find((d) => d.id === fresh)?.name, 'Kitchen sill', 'renamed: on the next map')
  const before = String((await get('/v0/devices/compact_map')).headers.etag)
  await post(fresh, owner.token, 0, [{ id: 55, value: 18 }])
  // A reading is served from the previous rendering while the next one builds.
  let after = await get('/v0/devices/compact_map', { 'if-none-match': before })
  for (let i = 0; i < 50 && after.statusCode === 304; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    after = await get('/v0/devices/compact_map', { 'if-none-match': before })
  }
  t.equal(after.statusCode, 200, 'a reading changes the compact map')
  t.equal(decodeCompact(after.json()).find((d) => d.id === fresh)?.condition, 'o', 'new to online')
  t.same(decodeCompact(after.json()), await worldMap('/v0/devices/world_map'), 'as the world map of the same build says')
  t.equal((await compact({}, '?measurement=1')).find((d) => d.id === fresh)?.value, 18, 'with its value')
  t.equal((await app.inject({ method: 'DELETE', url: `/v0/devices/${online}`, headers: bearer(owner.token) })).statusCode, 200)
  t.same((await compact()).map((d) => d.id), [fresh], 'archived: gone from the next map')
})
