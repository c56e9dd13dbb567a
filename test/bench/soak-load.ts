/**
 * The soak's load, in a process of its own so that building and sending takes no event-loop time
 * from the platform it measures: kits posting one timestamp of 12 sensors over HTTP and kits
 * publishing the firmware's `readings/raw` at QoS 1 over MQTT, at the same time.
 * `capacity`: both as fast as the platform answers (HTTP one request in flight per device, MQTT a
 * window of publishes per kit), for `seconds`. `paced`: both at the given rates, for `seconds`;
 * a tick that finds too many requests in flight sends nothing and counts as late, so a platform
 * that falls behind is reported rather than buried under a growing queue.
 * Prints one JSON line. Arguments: JSON {base, token, devices, mqttUrl, kitTokens, mode, seconds,
 * httpRate, mqttRate, start}.
 */
import mqtt from 'mqtt'
import { kitReading, rawPayload } from '../../scripts/kit-simulator.js'
import { httpPost } from './stats.js'

interface Options {
  base: string
  token: string
  devices: number[]
  mqttUrl: string
  kitTokens: string[]
  mode: 'capacity' | 'paced'
  seconds: number
  /** posts a second (paced) */
  httpRate: number
  /** messages a second (paced) */
  mqttRate: number
  /** the time of every kit's first reading; the n-th is n seconds later */
  start: number
}

export interface LoadResult { seconds: number, httpPosts: number, httpValues: number, mqttMessages: number, mqttValues: number, failures: number, lateTicks: number }

const options = JSON.parse(process.argv[2] ?? '{}') as Options
const SENSORS_12 = [10, 14, 53, 55, 56, 58, 87, 88, 89, 112, 113, 220]
const MQTT_WINDOW = 8
const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' }
const result: LoadResult = { seconds: 0, httpPosts: 0, httpValues: 0, mqttMessages: 0, mqttValues: 0, failures: 0, lateTicks: 0 }
const httpNext = options.devices.map(() => 0)
const mqttNext = options.kitTokens.map(() => 0)
let inFlight = 0

async function post (d: number): Promise<void> {
  const n = httpNext[d] ?? 0
  httpNext[d] = n + 1
  const body = JSON.stringify({ data: [{ recorded_at: new Date(options.start + n * 1000).toISOString(), sensors: SENSORS_12.map((id) => ({ id, value: id + (n % 100) / 10 })) }] })
  inFlight++
  try {
    await httpPost(`${options.base}/v0/devices/${options.devices[d] ?? 0}/readings`, headers, body)
    result.httpPosts++
    result.httpValues += SENSORS_12.length
  } catch (err) {
    if (result.failures++ < 3) process.stderr.write(`[soak-load] ${String(err)}\n`)
  } finally {
    inFlight--
  }
}

const clients = await Promise.all(options.kitTokens.map(async (token) => await mqtt.connectAsync(options.mqttUrl, { clientId: token, clean: true, reconnectPeriod: 0, keepalive: 120 })))

async function publish (k: number): Promise<void> {
  const token = options.kitTokens[k] ?? ''
  const n = mqttNext[k] ?? 0
  mqttNext[k] = n + 1
  const reading = kitReading(token, k, n, options.start + n * 1000)
  inFlight++
  try {
    await clients[k]?.publishAsync(`device/sck/${token}/readings/raw`, rawPayload(reading), { qos: 1 })
    result.mqttMessages++
    result.mqttValues += reading.sensors.length
  } catch (err) {
    if (result.failures++ < 3) process.stderr.write(`[soak-load] ${String(err)}\n`)
  } finally {
    inFlight--
  }
}

const t0 = performance.now()
const end = t0 + options.seconds * 1000
if (options.mode === 'capacity') {
  await Promise.all([
    ...options.devices.map(async (_, d) => { while (performance.now() < end) await post(d) }),
    ...options.kitTokens.flatMap((_, k) => Array.from({ length: MQTT_WINDOW }, async () => { while (performance.now() < end) await publish(k) }))
  ])
} else {
  const TICK_MS = 50
  // As many as the capacity run keeps in flight: more would mean the platform is behind. (A fifth
  // of a second's worth was too few: commits grouped under load take longer than that.)
  const maxInFlight = options.devices.length + options.kitTokens.length * MQTT_WINDOW
  let posts = 0
  let messages = 0
  const pending = new Set<Promise<void>>()
  const track = (p: Promise<void>): void => { pending.add(p); void p.finally(() => pending.delete(p)) }
  while (performance.now() < end) {
    const elapsed = (performance.now() - t0) / 1000
    if (inFlight > maxInFlight) {
      // What was due in this tick is dropped, not sent in a burst later.
      result.lateTicks++
      posts = Math.floor(elapsed * options.httpRate)
      messages = Math.floor(elapsed * options.mqttRate)
    } else {
      for (; posts < Math.floor(elapsed * options.httpRate); posts++) track(post(posts % Math.max(1, options.devices.length)))
      for (; messages < Math.floor(elapsed * options.mqttRate); messages++) track(publish(messages % Math.max(1, options.kitTokens.length)))
    }
    await new Promise((resolve) => setTimeout(resolve, TICK_MS))
  }
  await Promise.all(pending)
}
result.seconds = (performance.now() - t0) / 1000
await Promise.all(clients.map(async (client) => await client.endAsync()))
console.log(JSON.stringify(result))
