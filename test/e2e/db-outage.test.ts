import t from 'tap'
import mqtt from 'mqtt'
import postgres from 'postgres'
import { accountWithDevice } from '../helpers/embedded.js'
import { startPgCluster } from '../helpers/pg-cluster.js'
import { HTTP_LINE, startProcess, tempDataDir } from '../helpers/process.js'

/**
 * The database going away under write load (issue 21): PostgreSQL's sessions terminated, the
 * server stopped fast and immediately and started again, while HTTP clients post batches and MQTT
 * devices publish at QoS 1. The platform must stay up; while the database is away every answer is
 * 2xx or a 503 with Retry-After and the database as its reason, and quickly; once it is back, the
 * first HTTP write and the first PUBACK come within 3 s; and everything acknowledged is stored.
 */

const HTTP_CLIENTS = 6
const MQTT_DEVICES = 3
const DOWN_MS = 1500
const BASE_TIME = Date.parse('2026-11-01T00:00:00Z')

interface Answer { at: number, ms: number, status: number, id?: string, message?: string, retryAfter: string | null }

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
      const started = performance.now()
      try {
        const res = await fetch(`${base}/v0/devices/${owner.device}/readings`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(15_000) })
        const text = await res.text()
        const answer: Answer = { at: Date.now(), ms: performance.now() - started, status: res.status, retryAfter: res.headers.get('retry-after') }
        if (res.status >= 400) Object.assign(answer, JSON.parse(text) as { id: string, message: string })
        answers.push(answer)
        if (res.ok) for (const at of times) ackedHttp.set(at, Date.now())
        else await sleep(20)
      } catch (err) {
        answers.push({ at: Date.now(), ms: performance.now() - started, status: 0, message: String(err), retryAfter: null })
        await sleep(20)
      }
    }
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

  const load = [
    ...Array.from({ length: HTTP_CLIENTS }, async () => { await httpWriter() }),
    ...devices.map(async (device) => { await mqttPublisher(device) })
  ]
  await sleep(1500)
  t.ok(ackedHttp.size > 0 && ackedMqtt.size > 0, `writes flow before the outage (${ackedHttp.size} HTTP readings, ${ackedMqtt.size} PUBACKs)`)

  const outages: Array<{ name: string, downAt: number, upAt: number }> = []
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
    outages.push({ name: `terminate ${i + 1}`, downAt, upAt: Date.now() })
    await sleep(700)
  }
  // 2. and 3. The server stopped, away for a while, started again.
  for (const [name, stop] of [['stop -m fast', cluster.stopFast], ['stop -m immediate', cluster.stopImmediate]] as const) {
    const downAt = Date.now()
    await stop()
    await sleep(300)
    await probeReady()
    await sleep(DOWN_MS)
    await probeReady()
    await cluster.start()
    outages.push({ name, downAt, upAt: Date.now() })
    await sleep(4000)
  }
  state.loading = false
  await Promise.all(load)

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
  const latencies = unavailable.map((a) => a.ms)
  t.comment(`503 latency: p50 ${percentile(latencies, 0.5).toFixed(1)} ms, p90 ${percentile(latencies, 0.9).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`)
  // Measured by this process, which shares two cores with the platform and the other test files:
  // half within 100 ms is the target itself, the p90 bound leaves room for that machine.
  t.ok(percentile(latencies, 0.5) <= 100, `half the 503s within 100 ms (p50 ${percentile(latencies, 0.5).toFixed(1)} ms)`)
  t.ok(percentile(latencies, 0.9) <= 300, `nine in ten within 300 ms (p90 ${percentile(latencies, 0.9).toFixed(1)} ms)`)
  t.ok(Math.max(...latencies) < 5000, 'none waits on a connection attempt for long')

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
