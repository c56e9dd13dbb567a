/**
 * A closed-loop HTTP load in a process of its own: `concurrency` keep-alive clients request `url`
 * back to back for `seconds`, and one JSON line reports requests per second and latencies. Kept
 * apart from the server it measures so that the client's work takes no event-loop time from it.
 * Arguments: JSON {url, headers, concurrency, seconds, raw}; with raw, every latency is reported too;
 * with urls instead of url, the requests go round the list (a mix of routes).
 */
import { percentile } from './stats.js'

const options = JSON.parse(process.argv[2] ?? '{}') as { url?: string, urls?: string[], headers: Record<string, string>, concurrency: number, seconds: number, raw?: boolean }
const urls = options.urls ?? [options.url ?? '']
let next = 0
const nextUrl = (): string => urls[next++ % urls.length] ?? ''
const latencies: number[] = []
let failures = 0
// Warm the connections and the server's caches before the clock starts.
await Promise.all(Array.from({ length: Math.max(options.concurrency, urls.length) }, async () => { await (await fetch(nextUrl(), { headers: options.headers })).arrayBuffer() }))
const end = performance.now() + options.seconds * 1000
const t0 = performance.now()
await Promise.all(Array.from({ length: options.concurrency }, async () => {
  while (performance.now() < end) {
    const start = performance.now()
    const res = await fetch(nextUrl(), { headers: options.headers })
    await res.arrayBuffer()
    if (res.status !== 200) failures++
    latencies.push(performance.now() - start)
  }
}))
const seconds = (performance.now() - t0) / 1000
console.log(JSON.stringify({ requests: latencies.length, failures, requestsPerSecond: latencies.length / seconds, p50: percentile(latencies, 50), p95: percentile(latencies, 95), p99: percentile(latencies, 99), seconds, ...(options.raw === true ? { latencies } : {}) }))
