import { performance } from 'node:perf_hooks'
import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { bearer, signUp } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

/**
 * The access matrix's other half (issue 34): no answer may tell whether a device token or a MAC
 * address exists. Every route that takes one is asked, by a signed-in stranger, with the secret of
 * someone else's private device and with one no device has, TRIES times each, interleaved: the
 * statuses must be equal, the bodies equal once the secret sent and what changes from one request
 * to the next (ids, times, the caller's own new token) are masked, and the median times close.
 */
const TRIES = 30
/** Medians may differ by this much plus a share of the slower one: the machine's noise, not a lookup's cost. */
const NOISE_MS = 2
const NOISE_SHARE = 0.3

interface Probe {
  route: string
  request: (secret: string) => { method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: object, headers?: Record<string, string> }
  /** what the request changed that the next one must not see (a MAC taken over) */
  reset?: () => Promise<void>
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] ?? 0 : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

/** The body with the secret sent and whatever differs per request by nature replaced. */
function masked (res: LightMyRequestResponse, secret: string, forms: string[]): string {
  let text = res.body
  for (const form of [secret, ...forms]) text = text.split(form).join('<secret>')
  return text
    .replace(/UTC:[\d,]+#/g, 'UTC:<clock>#')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '<time>')
    .replace(/"(id|device_id)":\d+/g, '"$1":<id>')
    .replace(/"device_ids":\[[\d,]*\]/g, '"device_ids":[<ids>]')
    .replace(/"uuid":"[0-9a-f-]{36}"/g, '"uuid":"<uuid>"')
    .replace(/"device_token":"[a-z0-9]{6}"/g, '"device_token":"<own token>"')
    .replace(/\/devices\/\d+/g, '/devices/<id>')
}

t.test('no route tells whether a device token or a MAC address exists: status, body and time', async (t) => {
  const harness = await buildPlatform(t)
  const { app, database } = harness
  const victim = await signUp(app)
  const stranger = await signUp(app)
  const hidden = await makeDevice(database, victim.id, { isPrivate: true, kitId: 2, mac: '02:5e:c2:e7:00:01' })
  await database.sql`update devices set device_token = 'h1dd3n' where id = ${hidden}`
  // A public SCK 1.0 takes readings by its MAC alone (as the reference's kits post): /add stores
  // into it, and still answers as fast as for a MAC no device has.
  const open = await makeDevice(database, victim.id, { kitId: 2, mac: '02:5e:c2:e7:00:02' })
  const secrets = {
    token: { existing: 'h1dd3n', missing: 'n0n3x1' },
    mac: { existing: '02:5e:c2:e7:00:01', missing: '02:5e:c2:e7:00:99' },
    'public kit mac': { existing: '02:5e:c2:e7:00:02', missing: '02:5e:c2:e7:00:98' }
  }
  const own = (await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(stranger.token), payload: { name: 'Mine' } })).json().id as number
  const as = bearer(stranger.token)
  // A MAC taken over by the stranger's device goes back to the victim's before the next try.
  const giveBack = async (): Promise<void> => {
    await database.sql`update devices set mac_address = null, state = 'not_configured' where owner_id = ${stranger.id}`
    await database.sql`update devices set mac_address = ${secrets.mac.existing}::macaddr, old_mac_address = null, state = 'never_published' where id = ${hidden}`
  }

  const tokenProbes: Probe[] = [
    { route: 'POST /devices {device_token}', request: (s) => ({ method: 'POST', url: '/v0/devices', payload: { name: 'Guess', device_token: s }, headers: as }) },
    { route: 'PATCH /devices/:id {device_token}', request: (s) => ({ method: 'PATCH', url: `/v0/devices/${own}`, payload: { device_token: s }, headers: as }) },
    { route: 'PUT /devices/:id {device_token}', request: (s) => ({ method: 'PUT', url: `/v0/devices/${own}`, payload: { device_token: s }, headers: as }) },
    { route: 'GET /devices?q[device_token_eq]', request: (s) => ({ method: 'GET', url: `/v0/devices?q[device_token_eq]=${s}`, headers: as }) },
    { route: 'GET /devices?q[token_eq]', request: (s) => ({ method: 'GET', url: `/v0/devices?q[token_eq]=${s}`, headers: as }) }
  ]
  const recent = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19).replace('T', ' ')
  const addProbes: Probe[] = [
    ...(['GET', 'POST', 'PATCH', 'PUT'] as const).map((method): Probe => ({
      route: `${method} /add`,
      request: (s) => ({ method, url: '/add', headers: { 'x-smartcitizenmacaddr': s, 'x-smartcitizendata': `[{"temp":"21.5","timestamp":"${recent}"}]` } })
    })),
    { route: 'PUT /v0/add (anonymous, as the kit)', request: (s) => ({ method: 'PUT', url: '/v0/add', headers: { 'x-smartcitizenmacaddr': s.toUpperCase().replaceAll(':', '-'), 'x-smartcitizendata': '[]' } }) }
  ]
  const macProbes: Probe[] = [
    { route: 'PATCH /devices/:id {mac_address}', request: (s) => ({ method: 'PATCH', url: `/v0/devices/${own}`, payload: { mac_address: s }, headers: as }), reset: giveBack },
    { route: 'POST /devices {mac_address}', request: (s) => ({ method: 'POST', url: '/v0/devices', payload: { name: 'Guess', mac_address: s }, headers: as }), reset: giveBack },
    { route: 'GET /devices?q[mac_address_eq]', request: (s) => ({ method: 'GET', url: `/v0/devices?q[mac_address_eq]=${s}`, headers: as }) },
    ...addProbes
  ]

  const send = async (probe: Probe, secret: string): Promise<{ res: LightMyRequestResponse, ms: number }> => {
    const request = probe.request(secret)
    const started = performance.now()
    const res = await app.inject({ method: request.method, url: request.url, ...(request.headers === undefined ? {} : { headers: request.headers }), ...(request.payload === undefined ? {} : { payload: request.payload }) })
    const ms = performance.now() - started
    await probe.reset?.()
    return { res, ms }
  }
  const forms = (secret: string): string[] => [secret.toUpperCase().replaceAll(':', '-')]
  for (const [kind, probes] of [['token', tokenProbes], ['mac', macProbes], ['public kit mac', addProbes]] as const) {
    const { existing, missing } = secrets[kind]
    for (const probe of probes) {
      // Warm: the first request of a route compiles its schemas.
      await send(probe, missing)
      const times: Record<'existing' | 'missing', number[]> = { existing: [], missing: [] }
      const answers: Record<'existing' | 'missing', Set<string>> = { existing: new Set(), missing: new Set() }
      for (let i = 0; i < TRIES; i++) {
        // Interleaved, so that a slow moment of the machine falls on both.
        for (const which of i % 2 === 0 ? ['existing', 'missing'] as const : ['missing', 'existing'] as const) {
          const secret = which === 'existing' ? existing : missing
          const { res, ms } = await send(probe, secret)
          times[which].push(ms)
          answers[which].add(`${res.statusCode} ${String(res.headers['content-type'])} ${masked(res, secret, forms(secret))}`)
        }
      }
      const [one] = answers.existing
      t.equal(answers.existing.size, 1, `${probe.route}: one answer for an existing ${kind}`, { answers: [...answers.existing].map((a) => a.slice(0, 300)) })
      t.same([...answers.missing], [...answers.existing], `${probe.route}: the same answer for a missing one (${one?.slice(0, 60) ?? ''}…)`)
      const [e, m] = [median(times.existing), median(times.missing)]
      t.ok(Math.abs(e - m) <= NOISE_MS + NOISE_SHARE * Math.max(e, m), `${probe.route}: median ${e.toFixed(2)} ms for an existing ${kind}, ${m.toFixed(2)} ms for a missing one`)
    }
  }
  // The stranger's guesses changed nothing of the victim's device.
  await app.legacyAddSettled()
  const [row] = await database.sql<{ device_token: string, mac_address: string, n: number }[]>`
    select device_token, mac_address::text, (select count(*)::int from readings where device_id = ${hidden}) as n from devices where id = ${hidden}`
  t.same({ ...row }, { device_token: 'h1dd3n', mac_address: secrets.mac.existing, n: 0 }, 'the private device keeps its token and MAC, and took no reading by its MAC alone')
  const [stored] = await database.sql<{ n: number }[]>`select count(*)::int as n from readings where device_id = ${open}`
  t.ok((stored?.n ?? 0) > 0, 'the public kit took the readings sent with its MAC, for all that the answers were the same')
})
