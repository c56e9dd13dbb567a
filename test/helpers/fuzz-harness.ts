/**
 * The platform, fixtures and checks behind the generated-request test (test/fuzz/openapi.test.ts):
 * api + ingest + exporter on one server as `pnpm start` runs them, a write journal on every table,
 * a raw HTTP/1.1 client for the share of requests that must go through Node's own parser, and the
 * one check of an answer (no 5xx, the error shape on every 4xx).
 */
import net from 'node:net'
import { exporterService } from '@esp/exporter'
import { ingestService } from '@esp/ingest'
import type { Database } from '@esp/db'
import { installWriteJournal, type JournalRow, lowestIds, pendingJobCount } from '@esp/db/testing'
import { type ApiHarness, bearer, buildApi, signUp } from './api.js'
import { makeDevice } from './platform.js'
import type { Fixtures, FuzzRequest } from './openapi-fuzz.js'

interface Tap { teardown: (fn: () => unknown) => void }

export const BODY_LIMIT = 1024 * 1024

export async function buildAllInOne (t: Tap): Promise<ApiHarness> {
  return await buildApi(t, {
    server: { bodyLimit: BODY_LIMIT },
    extra: async (app, database, dataDir) => {
      await app.register(ingestService, { database, maxValues: 100_000, maxFutureSeconds: 86_400 })
      await app.register(exporterService, { database, dataDir, mailFrom: 'Fuzz <fuzz@example.org>', pollingIntervalSeconds: 0.5, schedules: false })
    }
  })
}

/** The write journal of packages/db/src/testing/write-journal.ts on the harness's database. */
export async function installJournal (database: Database): Promise<(since?: number) => Promise<{ last: number, rows: JournalRow[] }>> {
  return await installWriteJournal(database)
}

/** Waits until pg-boss has no waiting or running job, so that a job's writes are not charged to the next request. */
export async function settle (database: Database): Promise<void> {
  for (let i = 0; i < 30; i += 1) {
    if (await pendingJobCount(database) === 0) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

export interface Actor { id: number, username: string, password: string, token: string }
/** `stranger` only ever gets wrong passwords, so that throttling them locks out no account the test uses. */
export interface World { owner: Actor, other: Actor, stranger: string, fixtures: Fixtures }

/** A user who owns a public and a private device with readings, an experiment, an application and an import; and another user. */
export async function makeWorld (harness: ApiHarness): Promise<World> {
  const { app, database } = harness
  const owner = await signUp(app)
  const other = await signUp(app)
  const stranger = (await signUp(app)).username
  const publicDevice = await makeDevice(database, owner.id, { name: 'fuzz public', mac: '02:00:00:00:00:01' })
  const privateDevice = await makeDevice(database, owner.id, { isPrivate: true, name: 'fuzz private', mac: '02:00:00:00:00:02' })
  const sensors = await lowestIds(database, 'sensors', 3)
  const firstId = async (table: string): Promise<string[]> => (await lowestIds(database, table, 2)).map(String)
  const ask = async (method: 'POST', url: string, payload: object | string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> => {
    const res = await app.inject({ method, url, payload, headers: { ...bearer(owner.token), ...headers } })
    if (res.statusCode >= 300) throw new Error(`fixture ${method} ${url}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const recordedAt = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z')
  for (const device of [publicDevice, privateDevice]) {
    await ask('POST', `/v0/devices/${device}/readings`, { data: [{ recorded_at: recordedAt, sensors: sensors.map((id) => ({ id, value: 21.5 })) }] })
  }
  const experiment = await ask('POST', '/v0/experiments', { name: 'fuzz experiment', device_ids: [publicDevice, privateDevice] })
  const application = await ask('POST', '/v0/applications', { name: 'fuzz app', redirect_uri: 'https://example.org/callback' })
  const imported = await ask('POST', `/v0/devices/${publicDevice}/readings/csv`, `recorded_at,${sensors[0] ?? 1}\n${recordedAt},1\n`, { 'content-type': 'text/csv' })
  const ids = new Map<string, string[]>([
    ['users', [String(owner.id), owner.username, String(other.id)]],
    ['devices', [String(publicDevice), String(privateDevice)]],
    ['sensors', sensors.map(String)],
    ['measurements', await firstId('measurements')],
    ['kits', await firstId('kits')],
    ['tags', await firstId('tags')],
    ['tag_sensors', await firstId('tag_sensors')],
    ['experiments', [String(experiment.id)]],
    ['experiment', [String(experiment.id)]],
    ['applications', [String(application.id)]],
    ['import_id', [String(imported.id)]]
  ])
  const all = [...new Set([...ids.values()].flat())]
  await settle(database)
  return { owner, other, stranger, fixtures: { ids, all } }
}

/** Headers and query for the request's role: nobody, the other user, the owner, or credentials that fail. */
export function credentials (request: FuzzRequest, world: World): { headers: Record<string, string>, query: string } {
  const actor = request.role === 'owner' ? world.owner : request.role === 'other' ? world.other : undefined
  if (request.role === 'anonymous') return { headers: {}, query: '' }
  const token = actor?.token ?? 'not.a.token'
  const password = actor?.password ?? 'wrong password'
  const username = actor?.username ?? world.stranger
  if (request.auth === 'basic') return { headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` }, query: '' }
  if (request.auth === 'query') return { headers: {}, query: `access_token=${encodeURIComponent(token)}` }
  return { headers: { authorization: `Bearer ${token}` }, query: '' }
}

export interface Answer { status: number, contentType: string, body: string }

/**
 * What is wrong with an answer, or null: no 5xx, and every 4xx in the one error shape as JSON. A
 * request with `callback` gets JSON-P (behaviour.md: Rack::JSONP wraps any JSON answer, errors too):
 * the error inside the call is checked the same way.
 */
export function problemWith (answer: Answer, jsonp: boolean): string | null {
  if (answer.status === 0) return 'no HTTP answer'
  if (answer.status >= 500) return `a ${answer.status}`
  if (answer.status < 400) return null
  const wrapped = jsonp && /^application\/javascript\b/.test(answer.contentType) ? /^\/\*\*\/[\w$.]+\(([\s\S]*)\)$/.exec(answer.body)?.[1] : undefined
  if (wrapped === undefined && !/^application\/json\b/.test(answer.contentType)) return `a ${answer.status} with content type "${answer.contentType}"`
  let body: unknown
  try { body = JSON.parse(wrapped ?? answer.body) } catch { return `a ${answer.status} whose body is not JSON` }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return `a ${answer.status} whose body is not an object`
  const b = body as Record<string, unknown>
  const ok = typeof b.id === 'string' && typeof b.message === 'string' &&
    (b.errors === null || typeof b.errors === 'string' || typeof b.errors === 'object') &&
    (b.url === null || typeof b.url === 'string') && 'errors' in b && 'url' in b
  return ok ? null : `a ${answer.status} not in the error shape {id, message, errors, url}`
}

/** One request over a real socket, written by hand so that nothing is normalised before Node's parser sees it. */
export async function rawHttp (port: number, request: { method: string, url: string, headers: Record<string, string>, body?: string | Buffer }): Promise<Answer> {
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8')
  const headers = { host: `127.0.0.1:${port}`, connection: 'close', ...request.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) }
  const head = `${request.method} ${request.url} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`
  const raw = await new Promise<Buffer>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.setTimeout(15_000, () => { socket.destroy(new Error('no answer within 15 s')) })
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', (err) => { if (chunks.length > 0) resolve(Buffer.concat(chunks)); else reject(err) })
    socket.on('end', () => { resolve(Buffer.concat(chunks)) })
    socket.write(head)
    if (body !== undefined) socket.write(body)
  })
  const split = raw.indexOf('\r\n\r\n')
  const headText = raw.subarray(0, split < 0 ? raw.length : split).toString('latin1')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(headText)?.[1] ?? 0)
  const header = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(headText)?.[1]?.trim() ?? ''
  let rest = split < 0 ? Buffer.alloc(0) : raw.subarray(split + 4)
  if (/chunked/i.test(header('transfer-encoding'))) {
    const parts: Buffer[] = []
    for (;;) {
      const eol = rest.indexOf('\r\n')
      const size = parseInt(rest.subarray(0, eol).toString('latin1'), 16)
      if (eol < 0 || !(size > 0)) break
      parts.push(rest.subarray(eol + 2, eol + 2 + size))
      rest = rest.subarray(eol + 2 + size + 2)
    }
    rest = Buffer.concat(parts)
  }
  return { status, contentType: header('content-type'), body: rest.toString('utf8') }
}
