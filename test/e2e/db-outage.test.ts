import { monitorEventLoopDelay } from 'node:perf_hooks'
import t from 'tap'
import mqtt from 'mqtt'
import postgres from 'postgres'
import { accountWithDevice } from '@esp/test-helpers/embedded'
import { startPgCluster } from '@esp/test-helpers/pg-cluster'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

/**
 * The database going away under write load (issue 21): PostgreSQL's sessions terminated, the
 * server stopped fast and immediately and started again, while HTTP clients post batches and MQTT
 * devices publish at QoS 1. The platform must stay up; while the database is away every answer is
 * 2xx or a 503 with Retry-After and the database as its reason, and quickly; once it is back, the
 * first HTTP write and the first PUBACK come within 3 s; and everything acknowledged is stored.
 */

const HTTP_CLIENTS = Number(process.env.OUTAGE_HTTP_CLIENTS ?? 24)
const HTTP_READERS = Number(process.env.OUTAGE_HTTP_READERS ?? 8)
const MQTT_DEVICES = 3
// A client told 503 waits this long before it asks again, as a client honouring Retry-After would
// at least: every client asking again at once would measure this process's own event loop.
const RETRY_MS = 100
const DOWN_MS = 1500
const BASE_TIME = Date.parse('2026-11-01T00:00:00Z')

interface Answer { startedAt: number, at: number, ms: number, status: number, id?: string, message?: string, retryAfter: string | null }

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
}

t.test('PostgreSQL terminated, stopped fast and immediately under HTTP and MQTT load', async (t) => {
  const cluster = await startPgCluster(t)
  const platform = startProcess(t, 'scripts/start.ts', {
    DATABASE_URL: cluster.url,
    DATA_DIR: tempDataDir(t),
    PORT: '0',
    MQTT_PORT: '0',
    RATE_LIMIT_PER_MINUTE: '1000000',
    // The event loop of a loaded CI machine is not under test here; the pool probe is.
    PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0'
  })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  const mqttUrl = (await platform.waitFor(/MQTT\s+(mqtt:\/\/\S+)/))[1] ?? ''
  let exitedEarly: number | null | undefined
  void platform.exited.then((code) => { exitedEarly = code })

  const owner = await accountWithDevice(base, 'outage')
  const deviceJson = await (await fetch(`${base}/v0/devices/${owner.device}`, { headers: { authorization: `Bearer ${owner.token}` } })).json() as { device_token?: string }
  const deviceToken = deviceJson.device_token ?? ''
  t.ok(deviceToken.length > 0, 'the owner sees the device token')

  // HTTP writers: each request a batch of readings at times of its own; what got 2xx is acknowledged.
  const answers: Answer[] = []
  const ackedHttp = new Map<number, number>()
  let slot = 0
  const state = { loading: true }
  const httpWriter = async (): Promise<void> => {
    while (state.loading) {
      const times = Array.from({ length: 5 }, () => BASE_TIME + (slot++) * 1000)
      const body = JSON.stringify({ data: times.map((at) => ({ recorded_at: new Date(at).toISOString(), sensors: [{ id: 55, value: 1 }] })) })
      const answer = await ask(`${base}/v0/devices/${owner.device}/readings`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body })
      if (answer.status === 201 || answer.status === 200) for (const at of times) ackedHttp.set(at, Date.now())
      else await sleep(RETRY_MS)
    }
  }
  // HTTP readers: a device as its owner sees it (authentication, then a query).
  const httpReader = async (): Promise<void> => {
    while (state.loading) {
      const answer = await ask(`${base}/v0/devices/${owner.device}`, { headers: { authorization: `Bearer ${owner.token}` } })
      if (answer.status !== 200) await sleep(RETRY_MS)
    }
  }
  const ask = async (url: string, init: RequestInit): Promise<Answer> => {
    const startedAt = Date.now()
    const started = performance.now()
    let answer: Answer
    try {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) })
      const text = await res.text()
      answer = { startedAt, at: Date.now(), ms: performance.now() - started, status: res.status, retryAfter: res.headers.get('retry-after') }
      if (res.status >= 400) Object.assign(answer, JSON.parse(text) as { id: string, message: string })
    } catch (err) {
      answer = { startedAt, at: Date.now(), ms: performance.now() - started, status: 0, message: String(err), retryAfter: null }
    }
    answers.push(answer)
    return answer
  }

  // MQTT devices: QoS 1, reconnecting as the firmware does; what got a PUBACK is acknowledged.
  const ackedMqtt = new Map<number, number>()
  const pubacks: number[] = []
  const devices = Array.from({ length: MQTT_DEVICES }, (_, i) => mqtt.connect(mqttUrl, { clientId: `outage-device-${i}`, username: deviceToken, reconnectPeriod: 250, connectTimeout: 5000, clean: true }))
  t.teardown(async () => { await Promise.all(devices.map(async (device) => { await device.endAsync(true) })) })
  let mqttSlot = 0
  const mqttPublisher = async (device: mqtt.MqttClient): Promise<void> => {
    while (state.loading) {
      if (!device.connected) { await sleep(20); continue }
      const at = BASE_TIME - 10_000_000_000 + (mqttSlot++) * 1000
      const payload = JSON.stringify({ data: [{ recorded_at: new Date(at).toISOString(), sensors: [{ id: 55, value: 2 }] }] })
      await new Promise<void>((resolve) => {
        device.publish(`device/sck/${deviceToken}/readings`, payload, { qos: 1 }, (err) => {
          if (err === undefined || err === null) { ackedMqtt.set(at, Date.now()); pubacks.push(Date.now()) }
          resolve()
        })
        // A message whose connection closed without a PUBACK stays unacknowledged: move on.
        setTimeout(resolve, 3000)
      })
    }
  }

  const clientLag = monitorEventLoopDelay({ resolution: 10 })
  clientLag.enable()
  const load = [
    ...Array.from({ length: HTTP_CLIENTS }, async () => { await httpWriter() }),
    ...Array.from({ length: HTTP_READERS }, async () => { await httpReader() }),
    ...devices.map(async (device) => { await mqttPublisher(device) })
  ]
  // Warm: a cold process under this many clients takes a while to answer its first writes.
  for (let waited = 0; waited < 20_000 && (ackedHttp.size === 0 || ackedMqtt.size === 0); waited += 100) await sleep(100)
  await sleep(1000)
  t.ok(ackedHttp.size > 0 && ackedMqtt.size > 0, `writes flow before the outage (${ackedHttp.size} HTTP readings, ${ackedMqtt.size} PUBACKs)`)

  // downAt: the outage began; stoppedAt: the server was gone (connections refused); upAt: it accepted connections again.
  const outages: Array<{ name: string, downAt: number, stoppedAt: number, upAt: number }> = []
  const readyDuringOutage: Array<{ status: number, ms: number, message: string }> = []
  const probeReady = async (): Promise<void> => {
    const started = performance.now()
    const res = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(10_000) })
    readyDuringOutage.push({ status: res.status, ms: performance.now() - started, message: ((await res.json()) as { message?: string }).message ?? '' })
  }

  // 1. Sessions terminated (the server stays up), three times.
  for (let i = 0; i < 3; i++) {
    const downAt = Date.now()
    const count = await cluster.terminate('esp%')
    t.comment(`terminated ${count} sessions`)
    outages.push({ name: 'terminate', downAt, stoppedAt: Infinity, upAt: Date.now() })
    await sleep(700)
  }
  // 2. and 3. The server stopped, away for a while, started again.
  for (const [name, stop] of [['stop -m fast', cluster.stopFast], ['stop -m immediate', cluster.stopImmediate]] as const) {
    const downAt = Date.now()
    await stop()
    const stoppedAt = Date.now()
    await sleep(300)
    await probeReady()
    await sleep(DOWN_MS)
    await probeReady()
    await cluster.start()
    outages.push({ name, downAt, stoppedAt, upAt: Date.now() })
    await sleep(4000)
  }
  state.loading = false
  await Promise.all(load)
  clientLag.disable()
  // What this process adds to every latency it measures: its own event loop's delay, with up to
  // HTTP_CLIENTS requests and the MQTT devices on it, on cores the other test files share.
  const ownDelayMs = clientLag.percentile(99) / 1e6
  t.comment(`this process's own event loop delay: p99 ${ownDelayMs.toFixed(1)} ms, max ${(clientLag.max / 1e6).toFixed(1)} ms`)

  t.equal(exitedEarly, undefined, 'the platform process stayed up through every outage')
  t.equal((await fetch(`${base}/health/ready`)).status, 200, 'and it is ready again')

  const failures = answers.filter((a) => a.status !== 201 && a.status !== 200)
  const byStatus = new Map<string, number>()
  for (const a of answers) byStatus.set(String(a.status), (byStatus.get(String(a.status)) ?? 0) + 1)
  t.comment(`HTTP answers: ${JSON.stringify(Object.fromEntries(byStatus))}`)
  t.same(failures.filter((a) => a.status !== 503).map((a) => `${a.status} ${a.message ?? ''}`), [], 'never a 500, a reset or a hang: every failure is a 503')
  const unavailable = failures.filter((a) => a.status === 503)
  t.ok(unavailable.length > 0, `the outages were met (${unavailable.length} answers of 503)`)
  t.same(unavailable.filter((a) => a.retryAfter === null || !/the database is unavailable/.test(a.message ?? '')).map((a) => a.message), [],
    'each 503 has Retry-After and names the database as its reason')
  // When the platform closed its gate (its warning, pino's `time`, this machine's clock) and when it
  // opened again: the start of the first request after it that was served.
  const closedAt = platform.output().split('\n').filter((line) => line.includes('requests get 503 until it is back'))
    .map((line) => (JSON.parse(line) as { time: number }).time)
  const served = answers.filter((a) => a.status === 200 || a.status === 201).map((a) => a.startedAt).sort((a, b) => a - b)
  const closedSpans = closedAt.map((from) => ({ from, to: served.find((at) => at > from) ?? Infinity }))
  // A 503 that arrived while the gate was closed, by the outage it met; one that arrived before
  // (the transition: it was already waiting on the pool, under this load for up to seconds, or on
  // a connection attempt) by how long after the gate closed it was answered.
  const groups = new Map<string, number[]>()
  const transition: number[] = []
  for (const a of unavailable) {
    const outage = outages[outages.findLastIndex((o) => o.downAt <= a.startedAt)]
    if (closedSpans.some((span) => span.from <= a.startedAt && a.startedAt < span.to)) {
      const kind = outage === undefined ? 'before the outages' : a.startedAt >= outage.upAt ? 'back, not yet probed' : a.startedAt >= outage.stoppedAt ? 'stopped (refused)' : outage.name
      groups.set(kind, [...groups.get(kind) ?? [], a.ms])
    } else {
      const closed = closedAt.findLast((at) => at <= a.at)
      transition.push(closed === undefined ? a.ms : Math.max(0, a.at - Math.max(closed, a.startedAt)))
    }
  }
  const figures = (values: number[]): string => `n ${values.length}, p50 ${percentile(values, 0.5).toFixed(1)} ms, p99 ${percentile(values, 0.99).toFixed(1)} ms, max ${Math.max(...values).toFixed(1)} ms`
  const latencies = unavailable.map((a) => a.ms)
  t.comment(`503 latency, all: ${figures(latencies)}`)
  t.ok(Math.max(...latencies) < 5000, 'none waits on a connection attempt for long')
  // The target is 100 ms at p99. Measured here, each figure also holds this process's own delay
  // (above): the bound is 100 ms plus that p99, over every 503 that arrived while the gate was
  // closed; each kind's figures are printed (a kind has tens of answers, so its p99 is one slow turn).
  const bound = 100 + ownDelayMs
  for (const [kind, values] of groups) t.comment(`503 latency, arrived during the outage, ${kind}: ${figures(values)}`)
  // While the server is away (its sessions terminated, stopped, refusing). Once it accepts
  // connections again and before a probe has reopened the gate, a request may meet a server still
  // starting (57P03) through a pool reconnecting after its back-off: that is the end of the outage,
  // printed above and bounded only by the 5 s above (seen up to 1.2 s under the whole suite's load).
  const arrivedDuring = [...groups.entries()].filter(([kind]) => kind !== 'back, not yet probed').flatMap(([, values]) => values)
  t.ok(percentile(arrivedDuring, 0.99) <= bound, `p99 of the 503s that arrived while the server was away within ${bound.toFixed(0)} ms of the request (${figures(arrivedDuring)})`)
  t.ok([...groups.keys()].filter((kind) => kind !== 'back, not yet probed').length >= 3, `503s measured in each kind of outage (${[...groups.keys()].join(', ')})`)
  if (transition.length > 0) {
    t.comment(`503s already in flight when the gate closed, answered after it: ${figures(transition)}`)
    // Looser: the first failure is noticed by whoever meets it, and what waited on the pool then
    // fails through the pool's connection attempts (packages/db/src/client.ts).
    t.ok(percentile(transition, 0.99) <= 2 * bound + 50, `what waited on the pool is answered within ${(2 * bound + 50).toFixed(0)} ms of the gate closing (p99 ${percentile(transition, 0.99).toFixed(1)} ms)`)
  }

  t.comment(`/health/ready while the server was down: ${JSON.stringify(readyDuringOutage)}`)
  t.ok(readyDuringOutage.every((r) => r.status === 503 && /the database is unavailable/.test(r.message)), '/health/ready answers 503 with the reason while the server is down')
  t.ok(readyDuringOutage.every((r) => r.ms < 500), '/health/ready answers at once')

  for (const outage of outages.filter((o) => o.name.startsWith('stop'))) {
    const firstWrite = answers.find((a) => a.at > outage.upAt && (a.status === 201 || a.status === 200))
    const firstPuback = pubacks.find((at) => at > outage.upAt)
    const writeMs = firstWrite === undefined ? Infinity : firstWrite.at - outage.upAt
    const pubackMs = firstPuback === undefined ? Infinity : firstPuback - outage.upAt
    t.comment(`${outage.name}: down ${outage.upAt - outage.downAt} ms; first HTTP write ${writeMs} ms and first PUBACK ${pubackMs} ms after the server accepted connections`)
    t.ok(writeMs <= 3000, `${outage.name}: the first HTTP write succeeds within 3 s of the database's return (${writeMs} ms)`)
    t.ok(pubackMs <= 3000, `${outage.name}: the first PUBACK comes within 3 s (${pubackMs} ms)`)
  }

  // Everything acknowledged is there, whatever happened around it.
  const sql = postgres(cluster.url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end() })
  const rows = await sql<{ at: Date }[]>`select recorded_at as at from readings where device_id = ${owner.device} and sensor_id = 55`
  const stored = new Set(rows.map((r) => r.at.getTime()))
  // Each lost reading with the moment it was acknowledged, relative to the outages, to find the cause.
  const when = (ackedAt: number): string => outages.map((o) => `${o.name} ${ackedAt - o.downAt}/${ackedAt - o.upAt}`).join(', ')
  const lostHttp = [...ackedHttp].filter(([at]) => !stored.has(at)).map(([at, ackedAt]) => `${new Date(at).toISOString()} acknowledged at ${when(ackedAt)}`)
  const lostMqtt = [...ackedMqtt].filter(([at]) => !stored.has(at)).map(([at, ackedAt]) => `${new Date(at).toISOString()} acknowledged at ${when(ackedAt)}`)
  t.comment(`${ackedHttp.size} readings acknowledged over HTTP, ${ackedMqtt.size} over MQTT; ${stored.size} stored`)
  t.same(lostHttp, [], 'every reading acknowledged over HTTP is stored')
  t.same(lostMqtt, [], 'every reading acknowledged with a PUBACK is stored')

  platform.child.kill('SIGTERM')
  t.equal(await platform.exited, 0, 'it still stops cleanly')
})
