/**
 * The platform stays within its memory budget under generated bad requests (issue 33): a real
 * `pnpm start` process (scripts/start.ts with package.json's Node flags) with its default
 * authentication throttle and rate limits gets the requests of the OpenAPI fuzz test
 * (test/helpers/openapi-fuzz.ts) over real sockets from many loopback addresses, for LOAD_MS.
 * Its peak RSS as the kernel counts it (VmHWM, start-up included) must stay within BUDGET_MB.
 * MEMORY_LOAD_SECONDS sets the length of the load (default 60).
 */
import { readFileSync } from 'node:fs'
import net from 'node:net'
import t from 'tap'
import fc from 'fast-check'
import { credentials, type World } from '@esp/test-helpers/fuzz-harness'
import { type FuzzRequest, operationOrder, readOperations, requestFor } from '@esp/test-helpers/openapi-fuzz'
import { HTTP_LINE, startProcess, startScriptArgs, tempDataDir } from '@esp/test-helpers/process'

const BUDGET_MB = 300
const LOAD_MS = Number(process.env.MEMORY_LOAD_SECONDS ?? 60) * 1000
const CONCURRENCY = 6
/** Loopback addresses the requests come from, each with a rate limit of its own (127.0.2.1 up). */
const ADDRESSES = 48
const SEED = 20261128
const FILTER_KEYS = ['id', 'name', 'created_at', 'updated_at', 'owner_id', 'kit_id', 'state', 'city', 'country_code']

interface Answer { status: number, body: string }

/** One request written by hand (as the fuzz test's raw client does), from `localAddress`, so nothing is normalised first. */
async function raw (port: number, request: { method: string, url: string, headers: Record<string, string>, body?: string | Buffer, localAddress: string }): Promise<Answer> {
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8')
  const headers = { host: `127.0.0.1:${port}`, connection: 'close', ...request.headers, ...(body === undefined ? {} : { 'content-length': String(body.length) }) }
  const head = `${request.method} ${request.url} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`
  const data = await new Promise<Buffer>((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: request.localAddress })
    const chunks: Buffer[] = []
    socket.setTimeout(30_000, () => { socket.destroy() })
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    // A 413 or 401 answered before the whole body was taken closes the socket under the writer.
    socket.on('error', () => { resolve(Buffer.concat(chunks)) })
    socket.on('close', () => { resolve(Buffer.concat(chunks)) })
    socket.write(head)
    if (body !== undefined) socket.write(body)
  })
  const text = data.toString('utf8')
  const split = text.indexOf('\r\n\r\n')
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0), body: split < 0 ? '' : text.slice(split + 4) }
}

const kilobytes = (pid: number, field: 'VmRSS' | 'VmHWM'): number =>
  Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

t.setTimeout(240_000)

t.test('generated bad requests with the default limits keep the platform within its memory budget', async (t) => {
  const platform = startProcess(t, 'scripts/start.ts', { PORT: '0', MQTT_PORT: '0', DATA_DIR: tempDataDir(t) }, { nodeArgs: startScriptArgs() })
  const base = new URL((await platform.waitFor(HTTP_LINE, 120_000))[1] ?? '')
  const port = Number(base.port)
  const pid = platform.child.pid ?? 0
  const json = { 'content-type': 'application/json' }
  const call = async (method: string, url: string, body: unknown, token: string | undefined, localAddress: string): Promise<Record<string, unknown>> => {
    const answer = await raw(port, { method, url, headers: { ...json, ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) }, body: JSON.stringify(body), localAddress })
    if (answer.status >= 300) throw new Error(`fixture ${method} ${url}: ${answer.status} ${answer.body}`)
    return JSON.parse(answer.body) as Record<string, unknown>
  }

  // The fuzz test's world, made over HTTP: devices placed on the map (which loads the city index), readings, an experiment, an application.
  const actor = async (name: string): Promise<World['owner']> => {
    const account = { username: name, password: 'a long password for memory' }
    const created = await call('POST', '/v0/users', { ...account, email: `${name}@example.org` }, undefined, '127.0.1.1')
    const session = await call('POST', '/v0/sessions', account, undefined, '127.0.1.1')
    return { ...account, id: Number(created.id), token: String(session.access_token) }
  }
  const owner = await actor('owner')
  const other = await actor('other')
  const stranger = await actor('stranger')
  const devices: string[] = []
  for (const isPrivate of [false, true]) {
    const device = await call('POST', '/v0/devices', { name: 'memory', exposure: 'outdoor', latitude: 41.39, longitude: 2.16, is_private: isPrivate }, owner.token, '127.0.1.1')
    devices.push(String(device.id))
    await call('POST', `/v0/devices/${String(device.id)}/readings`, { data: [{ recorded_at: new Date(Date.now() - 3_600_000).toISOString(), sensors: [55, 56, 12].map((id) => ({ id, value: 21.5 })) }] }, owner.token, '127.0.1.1')
  }
  const experiment = await call('POST', '/v0/experiments', { name: 'memory experiment', device_ids: devices.map(Number) }, owner.token, '127.0.1.1')
  const application = await call('POST', '/v0/applications', { name: 'memory app', redirect_uri: 'https://example.org/callback' }, owner.token, '127.0.1.1')
  const ids = new Map<string, string[]>([
    ['users', [String(owner.id), owner.username, String(other.id)]], ['devices', devices], ['sensors', ['55', '56', '12']],
    ['measurements', ['1', '2']], ['kits', ['1', '2']], ['tags', ['1', '2']], ['tag_sensors', ['1', '2']],
    ['experiments', [String(experiment.id)]], ['experiment', [String(experiment.id)]], ['applications', [String(application.id)]]
  ])
  const world: World = { owner, other, stranger: stranger.username, fixtures: { ids, all: [...new Set([...ids.values()].flat())] } }

  const docs = await raw(port, { method: 'GET', url: '/docs/json', headers: {}, localAddress: '127.0.1.2' })
  // Deleting the caller's account or devices would end the fixtures early; the rest is fair game.
  const operations = readOperations(JSON.parse(docs.body)).sort((a, b) => operationOrder(a) - operationOrder(b))
    .filter((op) => !(op.method === 'DELETE' && (op.path === '/v0/me' || op.path.startsWith('/v0/devices/{'))))
  t.ok(operations.length > 20, `${operations.length} operations in the document`)

  let seed = SEED
  function * generated (): Generator<FuzzRequest> {
    for (;;) {
      for (const op of operations) {
        yield * fc.sample(requestFor(op, world.fixtures, { filterKeys: FILTER_KEYS, bodyLimit: 1024 * 1024 }), { seed: seed++, numRuns: 6 })
      }
    }
  }
  const requests = generated()
  const statuses = new Map<number, number>()
  let sent = 0
  let peakRssKb = 0
  const sampler = setInterval(() => { peakRssKb = Math.max(peakRssKb, kilobytes(pid, 'VmRSS')) }, 500)
  const end = Date.now() + LOAD_MS
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < end) {
      const request = requests.next().value as FuzzRequest
      const auth = credentials(request, world)
      const url = auth.query === '' ? request.url : `${request.url}${request.url.includes('?') ? '&' : '?'}${auth.query}`
      const n = sent++ % ADDRESSES
      const answer = await raw(port, { method: request.method, url, headers: { ...request.headers, ...auth.headers }, ...(request.body === undefined ? {} : { body: request.body }), localAddress: `127.0.2.${n + 1}` })
      statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
    }
  }))
  clearInterval(sampler)
  const hwmMb = kilobytes(pid, 'VmHWM') / 1024
  t.comment(`${sent} requests in ${LOAD_MS / 1000} s, by status ${JSON.stringify(Object.fromEntries(statuses))}; RSS peak sampled ${(peakRssKb / 1024).toFixed(1)} MB, VmHWM ${hwmMb.toFixed(1)} MB, at the end ${(kilobytes(pid, 'VmRSS') / 1024).toFixed(1)} MB`)
  t.ok((statuses.get(429) ?? 0) > 0 && (statuses.get(401) ?? 0) > 0, 'the default rate limit and the authentication throttle answered')
  t.ok(hwmMb <= BUDGET_MB, `peak RSS (VmHWM, start-up included) ${hwmMb.toFixed(1)} MB is at most ${BUDGET_MB} MB`)
  t.equal((await raw(port, { method: 'GET', url: '/health/live', headers: {}, localAddress: '127.0.1.3' })).status, 200, 'the platform is alive')
})
