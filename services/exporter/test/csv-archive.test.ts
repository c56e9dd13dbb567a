import { readdir } from 'node:fs/promises'
import path from 'node:path'
import t, { type Test } from 'tap'
import { bearer, errorBody, signUp, signUpAs } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'
import { exporterPlatform } from './platform.js'

const LINK_SECRET = 'archive-link-secret-for-tests'
const HOUR = 3600 * 1000

const platform = async (t: Test) => await exporterPlatform(t, { linkSecret: LINK_SECRET, exporter: { archiveLinkTtlSeconds: 3600 } })

/** 3 sensors over 12,000 minutes (about 20,000 values): 55 every minute, 56 every other minute, 10 every fifth. */
function history () {
  const data = []
  const expected = new Map<string, [number | null, number | null, number | null]>()
  for (let i = 0; i < 12_000; i++) {
    const at = new Date(Date.UTC(2026, 10, 15) + i * 60_000).toISOString()
    const t55 = Math.round((20 + Math.sin(i / 50) * 5) * 1000) / 1000
    const h56 = i % 2 === 0 ? 40 + (i % 37) / 7 : null
    const b10 = i % 5 === 0 ? 100 - i / 100 : null
    const sensors = [{ id: 55, value: t55 }, ...(h56 === null ? [] : [{ id: 56, value: h56 }]), ...(b10 === null ? [] : [{ id: 10, value: b10 }])]
    data.push({ recorded_at: at, sensors })
    expected.set(`${at.slice(0, 19)}Z`, [b10, t55, h56])
  }
  return { data, expected }
}

function parseCsv (text: string): { header: string, rows: Map<string, string[]> } {
  const [header = '', ...lines] = text.trimEnd().split('\n')
  return { header, rows: new Map(lines.map((line) => { const [at = '', ...cells] = line.split(','); return [at, cells] })) }
}

const linkOf = (text: string): string => {
  const url = /https?:\/\/\S+csv_archive\/\S+/.exec(text)?.[0]
  if (url === undefined) throw new Error(`no link in ${text}`)
  return url.replace(/^https?:\/\/[^/]+/, '')
}

t.test('an owner asks for an archive, gets a working link by e-mail, and the CSV holds every reading', async (t) => {
  const { app, database, dataDir, smtp, advance } = await platform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id, { kitId: 26 })
  const { data, expected } = history()
  for (let i = 0; i < data.length; i += 4000) {
    const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: data.slice(i, i + 4000) } })
    t.equal(posted.statusCode, 200, posted.body)
  }

  const asked = await app.inject({ url: `/v0/devices/${device}/readings/csv_archive`, headers: bearer(owner.token) })
  t.equal(asked.statusCode, 200)
  t.same(asked.json(), { id: 'ok', message: 'CSV Archive job added to queue', errors: null, url: null })
  const [mail] = await smtp.waitFor(1)
  t.same(mail?.to, [owner.email])
  t.equal(mail?.subject, 'Device CSV Archive Ready')
  const link = linkOf(mail?.text ?? '')
  t.match(link, new RegExp(`^/v0/devices/${device}/readings/csv_archive/${device}_\\d{13}\\.csv\\?expires=\\d+&signature=`))

  const download = await app.inject({ url: link })
  t.equal(download.statusCode, 200)
  t.match(download.headers['content-type'], /^text\/csv/)
  t.match(download.headers['content-disposition'], new RegExp(`attachment; filename=${device}_\\d{13}\\.csv`))
  const csv = parseCsv(download.body)
  const names = await database.sql<{ name: string, unit: string | null, measurement: string | null }[]>`
    select s.name, s.unit, m.name as measurement from sensors s left join measurements m on m.id = s.measurement_id where s.id in (10, 55, 56) order by s.id`
  t.equal(csv.header, ['timestamp', ...names.map((n) => `${n.measurement ?? n.name} in ${n.unit ?? ''} (${n.name})`)].join(','), 'one column per sensor, by sensor id, naming measurement, unit and sensor')
  t.match(csv.header, /^timestamp,battery in % \(/)
  t.equal(csv.rows.size, expected.size, 'one row per timestamp')
  let mismatches = 0
  for (const [at, values] of expected) {
    const cells = csv.rows.get(at)
    const got = (cells ?? []).map((c) => c === '' ? null : Number(c))
    if (cells === undefined || got.length !== 3 || got.some((v, i) => v !== values[i])) mismatches++
  }
  t.equal(mismatches, 0, 'every value read back exactly, empty where a sensor has none')
  t.same([...csv.rows.keys()], [...expected.keys()].sort(), 'ascending, in the contract format')

  const again = await app.inject({ url: `/v0/devices/${device}/readings/csv_archive`, headers: bearer(owner.token) })
  t.equal(again.statusCode, 420)
  t.match(errorBody(again), { id: 'enhance_your_calm', message: /6 hours/, errors: null, url: null })
  // Access tokens live an hour on the test clock: log in again after moving it.
  const login = async (): Promise<Record<string, string>> =>
    bearer((await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: owner.username, password: owner.password } })).json().access_token)
  advance(6 * HOUR - 1000)
  t.equal((await app.inject({ url: `/v0/devices/${device}/readings/csv_archive`, headers: await login() })).statusCode, 420, 'still within 6 hours')
  advance(1000)
  t.equal((await app.inject({ url: `/v0/devices/${device}/readings/csv_archive`, headers: await login() })).statusCode, 200, 'a rolling 6-hour window')
  const messages = await smtp.waitFor(2)
  t.equal(messages.length, 2)
  const second = await app.inject({ url: linkOf(messages[1]?.text ?? '') })
  t.equal(second.statusCode, 200, 'the new archive downloads')
  const files = await readdir(path.join(dataDir, 'archives', String(device)))
  t.same(files, [/csv_archive\/(\d+_\d+\.csv)/.exec(messages[1]?.text ?? '')?.[1]], 'a new archive replaces the older file')
})

t.test('concurrent requests: exactly one is queued, the others get 420', async (t) => {
  const { app, database } = await platform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const answers = await Promise.all(Array.from({ length: 8 }, async () => await app.inject({ url: `/v0/devices/${device}/readings/csv_archive`, headers: bearer(owner.token) })))
  t.same(answers.map((a) => a.statusCode).sort(), [200, 420, 420, 420, 420, 420, 420, 420])
  const [jobs] = await database.sql<{ count: number }[]>`select count(*)::int as count from pgboss.job where name = 'csv-archive' and (data->>'deviceId')::int = ${device}`
  t.equal(jobs?.count, 1, 'one job')
})

t.test('who may ask: 401 anonymous, 403 others, 404 unknown or archived, admins may', async (t) => {
  const { app, database, smtp } = await platform(t)
  const owner = await signUp(app)
  const other = await signUp(app)
  const admin = await signUpAs({ app, database, dataDir: '' }, 'admin')
  const device = await makeDevice(database, owner.id)
  const url = `/v0/devices/${device}/readings/csv_archive`
  const anonymous = await app.inject({ url })
  t.equal(anonymous.statusCode, 401)
  t.match(errorBody(anonymous), { id: 'unauthorized' })
  t.equal((await app.inject({ url, headers: bearer(other.token) })).statusCode, 403)
  t.equal((await app.inject({ url: '/v0/devices/999999/readings/csv_archive', headers: bearer(owner.token) })).statusCode, 404)
  t.equal((await app.inject({ url, headers: bearer(admin.token) })).statusCode, 200)
  const [mail] = await smtp.waitFor(1)
  t.same(mail?.to, [admin.email], 'the link goes to whoever asked (behaviour.md §11)')
  await database.sql`update devices set archived_at = now() where id = ${device}`
  t.equal((await app.inject({ url, headers: bearer(owner.token) })).statusCode, 404)
})

t.test('forged, altered and expired links are refused with the error body', async (t) => {
  const { app, database, smtp, advance } = await platform(t)
  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: '2026-11-20T10:00:00Z', sensors: [{ id: 55, value: 1.5 }] }] } })
  t.equal((await app.inject({ url: `/v0/devices/${device}/readings/csv_archive`, headers: bearer(owner.token) })).statusCode, 200)
  const [mail] = await smtp.waitFor(1)
  const link = linkOf(mail?.text ?? '')
  t.equal((await app.inject({ url: link })).statusCode, 200)
  const signature = /signature=([\w-]+)/.exec(link)?.[1] ?? ''
  const forged = link.replace(signature, `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`)
  const expires = Number(/expires=(\d+)/.exec(link)?.[1])
  const cases: [string, number, RegExp][] = [
    [forged, 403, /not valid/],
    [link.replace(`expires=${expires}`, `expires=${expires + 3600}`), 403, /not valid/],
    [link.replace(/&signature=[^&]+/, ''), 403, /not valid/],
    [link.replace(`/devices/${device}/`, `/devices/${device + 1}/`), 404, /CSV archive/],
    [link.replace(/_\d{13}\.csv/, '_1111111111111.csv'), 403, /not valid/]
  ]
  for (const [url, status, message] of cases) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, status, url)
    t.match(errorBody(res), { message, errors: null, url: null }, url)
  }
  advance(3600 * 1000 + 1000)
  const expired = await app.inject({ url: link })
  t.equal(expired.statusCode, 403)
  t.match(errorBody(expired), { id: 'forbidden', message: /expired/ })
})
