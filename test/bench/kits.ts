/**
 * Kits publishing the firmware's `readings/raw` payloads as fast as the broker takes them, in a
 * process of its own so that building and sending messages takes no event-loop time from the
 * broker it measures. Connects, prints `ready`, starts on a line from stdin, and prints one JSON
 * line with the seconds until every message was sent (QoS 0) or acknowledged (QoS 1).
 * Arguments: JSON {url, tokens, messages, qos, start}; with several URLs (a cluster's nodes) kit k
 * connects to the k-th in turn.
 */
import { createInterface } from 'node:readline'
import mqtt from 'mqtt'
import { kitReading, rawPayload } from '../../scripts/kit-simulator.js'

const options = JSON.parse(process.argv[2] ?? '{}') as { url: string | string[], tokens: string[], messages: number, qos: 0 | 1, start: number }
// Payloads are built before the clock starts: the figure is the broker's, not the simulator's.
const payloads = options.tokens.map((token, k) => Array.from({ length: options.messages }, (_, n) => rawPayload(kitReading(token, k, n, options.start + n * 60_000))))
const urls = Array.isArray(options.url) ? options.url : [options.url]
const clients = await Promise.all(options.tokens.map(async (token, k) => await mqtt.connectAsync(urls[k % urls.length] ?? '', { clientId: token, clean: true, reconnectPeriod: 0, keepalive: 120 })))
console.log('ready')
await new Promise<void>((resolve) => {
  const lines = createInterface({ input: process.stdin })
  lines.once('line', () => { lines.close(); process.stdin.destroy(); resolve() })
})
const t0 = performance.now()
await Promise.all(clients.map(async (client, k) => {
  const topic = `device/sck/${options.tokens[k] ?? ''}/readings/raw`
  await Promise.all((payloads[k] ?? []).map(async (payload) => await client.publishAsync(topic, payload, { qos: options.qos })))
}))
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000 }))
await Promise.all(clients.map(async (client) => await client.endAsync()))
