import http from 'node:http'
import t from 'tap'
import { type Database, pgDate } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { buildApi, signUp, TEST_JWT_SECRET } from '@esp/test-helpers/api'
import { connectMqtt, type Publisher, publishReadings } from '@esp/test-helpers/mqtt'
import { makeDevice } from '@esp/test-helpers/platform'
import { HTTP_LINE, startProcess } from '@esp/test-helpers/process'

const WORKERS = 16
const PER_REQUEST = 5
/** SIGTERM goes out once this many readings were acknowledged, so requests are in flight. */
const SIGNAL_AFTER = 200

t.test('SIGTERM during HTTP ingest load: every acknowledged reading is stored and the process exits 0', async (t) => {
  // The api in this process signs the user up; the ingest service runs on its own on the same database.
  const { app, database } = await buildApi(t)
  const user = await signUp(app)
  const device = await makeDevice(database, user.id)
  const ingest = startProcess(t, 'services/ingest/src/main.ts', {
    PORT: '0', MQTT_PORT: '0', DATABASE_URL: database.url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000'
  })
  const base = (await ingest.waitFor(HTTP_LINE))[1] ?? ''

  const acknowledged: string[] = []
  let signalled = false
  let acknowledgedAfterSignal = 0
  let refusedAfterSignal = 0
  const unexpected: string[] = []
  const start = Date.UTC(2026, 0, 1)
  const worker = async (w: number): Promise<void> => {
    for (let i = 0; ; i++) {
      // Each reading its own minute: worker w owns minutes w, w + WORKERS, ...
      const times = Array.from({ length: PER_REQUEST }, (_, k) => new Date(start + ((i * PER_REQUEST + k) * WORKERS + w) * 60_000).toISOString())
      const body = { data: times.map((at) => ({ recorded_at: at, sensors: [{ id: 55, value: w + i / 1000 }] })) }
      let res: Response
      try {
        res = await fetch(`${base}/v0/devices/${device}/readings`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body)
        })
      } catch {
        // The listener is gone: refused connections are what a client sees after SIGTERM.
        if (!signalled) unexpected.push('a connection failed before SIGTERM')
        else refusedAfterSignal++
        return
      }
      const text = await res.text()
      if (res.status >= 200 && res.status < 300) {
        acknowledged.push(...times)
        if (signalled) acknowledgedAfterSignal++
        if (!signalled && acknowledged.length >= SIGNAL_AFTER) {
          signalled = true
          ingest.child.kill('SIGTERM')
        }
      } else if (res.status !== 503) {
        // 503 (under pressure) is a refusal the client retries; anything else is a bug.
        unexpected.push(`${res.status} ${text}`)
        return
      }
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, async (_, w) => { await worker(w) }))

  t.same(unexpected, [], 'no unexpected answers')
  if (unexpected.length > 0) t.comment(ingest.output().split('\n').filter((line) => line.includes('"level":50')).join('\n'))
  t.ok(signalled, 'SIGTERM was sent under load')
  t.equal(await ingest.exited, 0, 'the process exits 0 after draining')
  t.match(ingest.output(), /"msg":"closed"/, 'the shutdown ran to its end')
  t.ok(refusedAfterSignal > 0, 'new requests were refused after SIGTERM')
  t.ok(acknowledgedAfterSignal > 0, 'requests in flight at SIGTERM were finished and answered')
  t.comment(`${acknowledged.length} readings acknowledged, ${acknowledgedAfterSignal} requests answered 2xx after SIGTERM`)

  const rows = await database.sql<{ at: Date }[]>`select recorded_at as at from readings where device_id = ${device}`
  const stored = new Set(rows.map((row) => pgDate(row.at).toISOString()))
  const missing = acknowledged.filter((at) => !stored.has(at))
  t.same(missing, [], `all ${acknowledged.length} acknowledged readings are stored`)
  t.equal(new Set(acknowledged).size, acknowledged.length, 'every acknowledged reading is a distinct one')
})

t.test('SIGTERM during api load: requests in flight are answered in full, then the process exits 0', async (t) => {
  const { database } = await buildApi(t)
  const api = startProcess(t, 'services/api/src/main.ts', {
    PORT: '0', DATABASE_URL: database.url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000'
  })
  const base = (await api.waitFor(HTTP_LINE))[1] ?? ''
  let answered = 0
  let signalled = false
  let answeredAfterSignal = 0
  const unexpected: string[] = []
  const worker = async (): Promise<void> => {
    for (;;) {
      let res: Response
      try {
        res = await fetch(`${base}/v0/sensors?per_page=50`)
      } catch {
        if (!signalled) unexpected.push('a connection failed before SIGTERM')
        return
      }
      // The whole body arrives: a response cut off by the shutdown would fail to parse.
      const body = await res.json().catch(() => 'truncated') as unknown
      if (res.status !== 200 || !Array.isArray(body)) {
        unexpected.push(`${res.status} ${JSON.stringify(body).slice(0, 200)}`)
        return
      }
      answered++
      if (signalled) answeredAfterSignal++
      if (!signalled && answered >= 100) {
        signalled = true
        api.child.kill('SIGTERM')
      }
    }
  }
  await Promise.all(Array.from({ length: WORKERS }, async () => { await worker() }))
  t.same(unexpected, [], 'every answer was a complete 200, until connections were refused')
  t.equal(await api.exited, 0)
  t.match(api.output(), /"msg":"closed"/)
  t.ok(answeredAfterSignal > 0, 'requests in flight at SIGTERM were answered')
})

interface Sent {
  /** resolves once the request's bytes are handed to the kernel */
  sent: Promise<void>
  /** the status, or how the exchange failed */
  answer: Promise<string>
}

/** A GET whose sending and answer can be awaited apart; `agent: false` opens a connection of its own. */
function get (url: string, agent: http.Agent | false): Sent {
  let markSent = (): void => {}
  const sent = new Promise<void>((resolve) => { markSent = resolve })
  const answer = new Promise<string>((resolve) => {
    const request = http.get(url, { agent }, (res) => {
      res.resume()
      res.on('end', () => { resolve(String(res.statusCode)) })
      res.on('error', (err: NodeJS.ErrnoException) => { resolve(`cut off: ${err.code ?? err.message}`) })
    })
    request.on('finish', markSent)
    request.on('error', (err: NodeJS.ErrnoException) => { markSent(); resolve(`failed: ${err.code ?? err.message}`) })
  })
  return { sent, answer }
}

t.test('SIGTERM 0 to 40 ms after requests were sent: every one is answered, none reset', async (t) => {
  const { database } = await buildApi(t)
  const ROUNDS = 4
  /** one request every 2 ms, the first 40 ms before the signal */
  const SPREAD_MS = 40
  const failed: string[] = []
  let answered = 0
  for (let round = 0; round < ROUNDS; round++) {
    const api = startProcess(t, 'services/api/src/main.ts', {
      PORT: '0', DATABASE_URL: database.url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000'
    })
    const base = (await api.waitFor(HTTP_LINE))[1] ?? ''
    // Half the requests go over kept-alive connections, idle when their request arrives; half
    // open a connection each, accepted just before the signal.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 8 })
    t.teardown(() => { agent.destroy() })
    await Promise.all(Array.from({ length: 8 }, async () => { await get(`${base}/v0/`, agent).answer }))
    const requests: Array<Sent & { label: string }> = []
    const start = performance.now()
    for (let i = 0; i <= SPREAD_MS / 2; i++) {
      const due = start + i * 2
      while (performance.now() < due) await new Promise((resolve) => setImmediate(resolve))
      const kept = i % 2 === 0
      const url = i % 4 < 2 ? `${base}/v0/sensors?per_page=50` : `${base}/v0/`
      requests.push({ ...get(url, kept ? agent : false), label: `round ${round}, ${SPREAD_MS - i * 2} ms before, ${kept ? 'kept-alive' : 'new'} connection` })
    }
    // Every request is on the wire before the signal goes out.
    await Promise.all(requests.map(async ({ sent }) => { await sent }))
    api.child.kill('SIGTERM')
    for (const { label, answer } of requests) {
      const outcome = await answer
      if (/^\d{3}$/.test(outcome)) answered++
      else failed.push(`${label}: ${outcome}`)
    }
    t.equal(await api.exited, 0, `round ${round}: the process exits 0`)
  }
  t.same(failed, [], 'every request sent before the signal got an HTTP answer')
  t.comment(`${answered} requests answered over ${ROUNDS} rounds`)
})

/** The `MQTT  mqtt://…` line; group 1 is the broker's URL. */
const MQTT_LINE = /MQTT\s+(mqtt:\/\/\S+)/
const KITS = 8
/** PUBLISHes each kit keeps in flight, so several are being stored at any moment */
const WINDOW = 10
/** a bound a loaded two-core machine keeps; the figures measured are printed as comments */
const EXIT_BOUND_MS = 3000

/** Kits (devices) of one owner whose tokens are the MQTT client ids, as the firmware connects. */
async function fleet (database: Database, prefix: string): Promise<{ token: string, id: number }[]> {
  const [owner] = await database.sql<{ id: number }[]>`insert into users (username, email) values (${`fleet${prefix}`}, ${`fleet${prefix}@example.org`}) returning id`
  const tokens = Array.from({ length: KITS }, (_, i) => `${prefix}${i.toString(16).padStart(6 - prefix.length, '0')}`)
  return await database.sql<{ token: string, id: number }[]>`
    insert into devices (owner_id, name, device_token, state)
    select ${owner?.id ?? 0}, 'kit ' || token, token, 'never_published' from unnest(${tokens}::text[]) as token
    returning device_token as token, id`
}

async function storedTimes (database: Database, device: number): Promise<string[]> {
  const rows = await database.sql<{ at: Date }[]>`select recorded_at as at from readings where device_id = ${device} order by recorded_at`
  return rows.map((row) => pgDate(row.at).toISOString().replace('.000', ''))
}

for (const { entry, signal, prefix } of [
  { entry: 'scripts/start.ts', signal: 'SIGTERM', prefix: 'a' },
  { entry: 'services/ingest/src/main.ts', signal: 'SIGTERM', prefix: 'b' },
  // Ctrl+C: SIGINT to the process group, as a terminal sends it to its foreground job.
  { entry: 'scripts/start.ts', signal: 'Ctrl+C', prefix: 'c' }
] as const) {
  t.test(`${signal} to ${entry} while kits publish over MQTT: stored equals acknowledged, and it exits 0 quickly`, async (t) => {
    const database = await createTestDatabase(t)
    const kits = await fleet(database, prefix)
    const platform = startProcess(t, entry, {
      PORT: '0', MQTT_PORT: '0', DATABASE_URL: database.url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info'
    }, { detached: signal === 'Ctrl+C' })
    const send = (): void => {
      if (signal === 'SIGTERM') { platform.child.kill('SIGTERM'); return }
      const group = platform.child.pid
      if (group === undefined) throw new Error('no pid')
      process.kill(-group, 'SIGINT')
    }
    const url = (await platform.waitFor(MQTT_LINE))[1] ?? ''
    const clients = await Promise.all(kits.map(async ({ token }) => await connectMqtt(t, url, { clientId: token })))

    const publishers: Publisher[] = []
    let acks = 0
    let signalledAt: number | undefined
    let acksAfterSignal = 0
    const signalled = new Promise<void>((resolve) => {
      const onAck = (): void => {
        acks++
        if (signalledAt !== undefined) acksAfterSignal++
        // Mid-stream: every kit has WINDOW messages in flight when the signal goes out.
        else if (acks >= 400) {
          signalledAt = Date.now()
          send()
          resolve()
        }
      }
      publishers.push(...clients.map((client, i) => publishReadings(client, kits[i]?.token ?? '', { window: WINDOW, start: Date.UTC(2026, 0, 1), onAck })))
    })
    await signalled
    const code = await platform.exited
    const exitMs = Date.now() - (signalledAt ?? 0)
    await Promise.all(publishers.map(async (p) => { await p.closed }))

    t.equal(code, 0, 'the process exits 0 after draining')
    t.match(platform.output(), /"msg":"closed"/, 'the shutdown ran to its end')
    t.ok(acksAfterSignal > 0, 'PUBLISHes in flight at the signal were acknowledged after it')
    let acked = 0
    let stored = 0
    for (const [i, kit] of kits.entries()) {
      const times = await storedTimes(database, kit.id)
      const acknowledged = publishers[i]?.acked ?? []
      acked += acknowledged.length
      stored += times.length
      const ackedSet = new Set(acknowledged)
      const storedSet = new Set(times)
      t.same(acknowledged.filter((at) => !storedSet.has(at)), [], `kit ${i}: every acknowledged message is stored`)
      // The key promise: no PUBLISH was committed and then left without its PUBACK by the close.
      t.same(times.filter((at) => !ackedSet.has(at)), [], `kit ${i}: every stored message was acknowledged`)
    }
    t.ok(exitMs < EXIT_BOUND_MS * 2, `exit within ${EXIT_BOUND_MS * 2} ms under load`)
    t.comment(`${entry} ${signal} under load: exit ${exitMs} ms after the signal; ${acked} acknowledged, ${stored} stored, ${acksAfterSignal} acknowledged after the signal, ${publishers.reduce((n, p) => n + p.sent(), 0)} sent`)
  })
}

t.test('SIGTERM to pnpm start with idle MQTT clients (TCP and WebSocket): exits 0 within the bound', async (t) => {
  const database = await createTestDatabase(t)
  const kits = await fleet(database, 'd')
  const platform = startProcess(t, 'scripts/start.ts', {
    PORT: '0', MQTT_PORT: '0', DATABASE_URL: database.url, JWT_SECRET: TEST_JWT_SECRET, LOG_LEVEL: 'info'
  })
  const url = (await platform.waitFor(MQTT_LINE))[1] ?? ''
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  const clients = await Promise.all(kits.map(async ({ token }, i) =>
    await connectMqtt(t, i % 2 === 0 ? url : `${base.replace('http', 'ws')}/mqtt`, { clientId: token })))
  // Each kit sent one reading and has its PUBACK: nothing is pending at the signal.
  await Promise.all(clients.map(async (client, i) => {
    await client.publishAsync(`device/sck/${kits[i]?.token ?? ''}/readings`, JSON.stringify({ data: [{ recorded_at: '2026-01-01T00:00:00Z', sensors: [{ id: 55, value: i }] }] }), { qos: 1 })
  }))
  const closed = Promise.all(clients.map(async (client) => await new Promise<void>((resolve) => { client.once('close', () => { resolve() }) })))
  const signalledAt = Date.now()
  platform.child.kill('SIGTERM')
  const code = await platform.exited
  const exitMs = Date.now() - signalledAt
  await closed
  t.equal(code, 0)
  t.match(platform.output(), /"msg":"closed"/)
  t.ok(exitMs < EXIT_BOUND_MS, `exit within ${EXIT_BOUND_MS} ms when nothing is pending`)
  t.comment(`idle: exit ${exitMs} ms after SIGTERM with ${KITS} connected clients (half over WebSocket)`)
})
