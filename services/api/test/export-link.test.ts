import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { ingestService } from '@esp/ingest'
import { EXPORT_LINK_TTL_SECONDS } from '@esp/domain'
import { bearer, buildApi, errorBody, signUp, signUpAs } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'

/**
 * Short-lived download links of a device's export (issue 34): a browser downloads a private
 * device's readings without its session token in an address. A link works for its device and
 * route until it expires, as the user who asked for it; altered, moved to another device or
 * route, or expired, it is a 403 in the one error shape, and it authenticates nothing else.
 */

const isErrorShape = (res: LightMyRequestResponse): boolean => {
  const body = errorBody(res)
  return typeof body.id === 'string' && typeof body.message === 'string' && 'errors' in body && 'url' in body
}

t.test('export links', async (t) => {
  let now = Date.UTC(2026, 9, 1, 12)
  const clock = (): Date => new Date(now)
  const lines: string[] = []
  const harness = await buildApi(t, {
    deps: { clock },
    server: { logLevel: 'info', logStream: { write: (line: string) => { lines.push(line) } } },
    extra: async (app, database) => { await app.register(ingestService, { database, maxValues: 1000, maxFutureSeconds: 86_400, clock }) }
  })
  const { app, database } = harness
  const owner = await signUp(app)
  const citizen = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const hidden = await makeDevice(database, owner.id, { isPrivate: true })
  const otherHidden = await makeDevice(database, owner.id, { isPrivate: true })
  const open = await makeDevice(database, owner.id)
  const at = new Date(now - 3_600_000).toISOString()
  for (const [device, value] of [[hidden, 271.8281], [otherHidden, 314.159], [open, 12.25]] as const) {
    const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: at, sensors: [{ id: 55, value }] }] } })
    t.equal(posted.statusCode, 200, posted.body)
  }
  const ask = async (device: number | string, token?: string): Promise<LightMyRequestResponse> =>
    await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings/export/link`, headers: token === undefined ? {} : bearer(token) })
  /** The link's path and query, as a browser on this origin asks for it. */
  const pathOf = (url: string): string => { const parsed = new URL(url); return `${parsed.pathname}${parsed.search}` }
  const keyOf = (url: string): string => new URL(url).searchParams.get('download_key') ?? ''
  const get = async (url: string): Promise<LightMyRequestResponse> => await app.inject({ url })

  const made = await ask(hidden, owner.token)
  t.equal(made.statusCode, 200, made.body)
  const link = made.json() as { url: string, expires_at: string }
  t.equal(made.headers['cache-control'], 'no-store', 'the link is never cached')
  t.match(link.url, new RegExp(`/v0/devices/${hidden}/readings/export\\?download_key=[\\w.-]+$`), 'a link to the export of that device')
  t.equal(link.expires_at, new Date(now + EXPORT_LINK_TTL_SECONDS * 1000).toISOString().replace('.000Z', 'Z'), `good for ${EXPORT_LINK_TTL_SECONDS} seconds`)
  t.notOk(link.url.includes(owner.token), 'the session token is not in it')
  const key = keyOf(link.url)

  await t.test('the link downloads the private device\'s export, with no other credential', async (t) => {
    const csv = await get(`${pathOf(link.url)}&format=csv`)
    t.equal(csv.statusCode, 200, csv.body)
    t.match(csv.headers['content-type'], /^text\/csv/)
    t.match(csv.body, /271\.8281/, 'the private reading')
    t.notMatch(csv.body, /314\.159/, 'and nothing of another device')
    t.equal(csv.headers['cache-control'], 'private, no-store', 'no shared cache keeps what a link downloads')
    const ndjson = await get(`${pathOf(link.url)}&format=ndjson&sensor_id=55`)
    t.equal(ndjson.statusCode, 200, 'the export\'s other parameters still apply')
    const without = await get(`/v0/devices/${hidden}/readings/export?format=csv`)
    t.equal(without.statusCode, 404, 'without it, the private device is a missing one')
  })

  await t.test('it works for its own device only, and only unaltered', async (t) => {
    const cases: Array<[string, string]> = [
      ['on another device of the same owner', `/v0/devices/${otherHidden}/readings/export?format=csv&download_key=${key}`],
      ['on a public device', `/v0/devices/${open}/readings/export?format=csv&download_key=${key}`],
      ['with the signature changed', `/v0/devices/${hidden}/readings/export?download_key=${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`],
      ['with another user id', `/v0/devices/${hidden}/readings/export?download_key=${key.replace(/^\d+/, String(citizen.id))}`],
      ['with a later expiry', `/v0/devices/${hidden}/readings/export?download_key=${key.replace(/\.(\d+)\./, (_m, e: string) => `.${Number(e) + 3600}.`)}`],
      ['made up', `/v0/devices/${hidden}/readings/export?download_key=1.4102444800.${'A'.repeat(43)}`],
      ['garbled', `/v0/devices/${hidden}/readings/export?download_key=not-a-key`],
      ['empty', `/v0/devices/${hidden}/readings/export?download_key=`],
      ['the session token', `/v0/devices/${hidden}/readings/export?download_key=${encodeURIComponent(owner.token.slice(0, 100))}`]
    ]
    for (const [what, url] of cases) {
      const res = await get(url)
      t.equal(res.statusCode, 403, `a link ${what}: 403`)
      t.ok(isErrorShape(res), `a link ${what}: the error shape`)
      t.equal(errorBody(res).id, 'forbidden')
      t.equal(errorBody(res).message, 'This download link is not valid')
      t.notMatch(res.body, /271\.8281|314\.159|12\.25/, `a link ${what}: no readings`)
    }
    const long = await get(`/v0/devices/${hidden}/readings/export?download_key=${'x'.repeat(101)}`)
    t.equal(long.statusCode, 400, 'a key longer than any link\'s is a 400')
    t.ok(isErrorShape(long))
    const missing = await get(`/v0/devices/987654321/readings/export?download_key=${key}`)
    t.equal(missing.statusCode, 403, 'a missing device is the same 403: a key names no device it was not made for')
    const words = await get(`/v0/devices/abc/readings/export?download_key=${key}`)
    t.equal(words.statusCode, 404, 'a path that names no device is its usual 404')
  })

  await t.test('it authenticates nothing else', async (t) => {
    const elsewhere: Array<[string, string, number]> = [
      ['GET /me', `/v0/me?download_key=${key}`, 401],
      ['GET /devices/:id', `/v0/devices/${hidden}?download_key=${key}`, 404],
      ['GET /devices/:id/readings', `/v0/devices/${hidden}/readings?rollup=1h&sensor_id=55&download_key=${key}`, 404],
      ['GET /devices/:id/readings/csv_archive', `/v0/devices/${hidden}/readings/csv_archive?download_key=${key}`, 401],
      ['GET /readings/export', `/v0/readings/export?device_ids=${hidden}&download_key=${key}`, 404]
    ]
    for (const [route, url, status] of elsewhere) {
      const res = await get(url)
      t.equal(res.statusCode, status, `${route} with the key in its query answers as to anyone`)
      t.ok(isErrorShape(res))
      t.notMatch(res.body, /271\.8281/)
    }
    for (const [how, headers, url] of [
      ['as a bearer token', bearer(key), '/v0/me'],
      ['as access_token', {}, `/v0/me?access_token=${key}`]
    ] as const) {
      const res = await app.inject({ url, headers })
      t.equal(res.statusCode, 401, `the key ${how} is no credential`)
      t.ok(isErrorShape(res))
    }
    const archive = await app.inject({ url: `/v0/devices/${hidden}/readings/csv_archive/${hidden}_1764000000000.csv?expires=4102444800&signature=${key.split('.')[2] ?? ''}` })
    t.equal(archive.statusCode, 403, 'its signature signs no archive link')
  })

  await t.test('it expires', async (t) => {
    const fresh = (await ask(hidden, owner.token)).json() as { url: string }
    now += (EXPORT_LINK_TTL_SECONDS - 1) * 1000
    t.equal((await get(pathOf(fresh.url))).statusCode, 200, 'a second before its end it works')
    now += 2000
    const late = await get(pathOf(fresh.url))
    t.equal(late.statusCode, 403, 'after it, a 403')
    t.ok(isErrorShape(late))
    t.equal(errorBody(late).message, 'This download link has expired; ask for a new one')
  })

  await t.test('who may have one: those who may see the device', async (t) => {
    t.equal((await ask(hidden)).statusCode, 401, 'anonymous: 401')
    t.ok(isErrorShape(await ask(hidden)))
    const stranger = await ask(hidden, citizen.token)
    const nothing = await ask(987654321, citizen.token)
    t.equal(stranger.statusCode, 404, 'another user: the private device does not exist')
    t.same([stranger.statusCode, stranger.body], [nothing.statusCode, nothing.body.replaceAll('987654321', String(hidden))], 'answered as an id that names no device')
    t.equal((await ask('abc', owner.token)).statusCode, 404, 'an id that names no device: 404')
    const byAdmin = await ask(hidden, admin.token)
    t.equal(byAdmin.statusCode, 200, 'an admin may')
    t.equal((await get(`${pathOf((byAdmin.json() as { url: string }).url)}&format=csv`)).statusCode, 200, 'and the admin\'s link works')
    const onPublic = await ask(open, citizen.token)
    t.equal(onPublic.statusCode, 200, 'anyone signed in, for a public device')
    // The link is the user's own access, checked when it is used.
    await database.sql`update devices set is_private = true where id = ${open}`
    const revoked = await get(`${pathOf((onPublic.json() as { url: string }).url)}&format=csv`)
    t.equal(revoked.statusCode, 404, 'the device made private since: the citizen\'s link finds no device')
    t.notMatch(revoked.body, /12\.25/)
    await database.sql`update devices set is_private = false where id = ${open}`
    const gone = await signUp(app)
    const theirs = (await ask(open, gone.token)).json() as { url: string }
    await database.sql`update users set archived_at = now() where id = ${gone.id}`
    t.equal((await get(pathOf(theirs.url))).statusCode, 403, 'the user archived since: the link is not valid')
  })

  await t.test('no key in the log', async (t) => {
    const log = lines.join('')
    t.ok(log.includes('incoming request'), 'requests are logged')
    t.notOk(log.includes(key.split('.')[2] ?? 'no key'), 'no link signature in the log')
    t.match(log, /download_key=\[REDACTED\]/)
  })
})
