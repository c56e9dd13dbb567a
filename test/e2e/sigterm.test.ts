import t from 'tap'
import { pgDate } from '@esp/db'
import { buildApi, signUp, TEST_JWT_SECRET } from '../helpers/api.js'
import { makeDevice } from '../helpers/platform.js'
import { HTTP_LINE, startProcess } from '../helpers/process.js'

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
