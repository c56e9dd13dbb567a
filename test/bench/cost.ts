import { readFileSync } from 'node:fs'
import http from 'node:http'
import { costlyRequests } from '@esp/test-helpers/costly-requests'
import { readOperations } from '@esp/test-helpers/openapi-fuzz'
import { startAllInOne } from './child.js'
import type { BenchPlatform } from './setup.js'
import { progress, round } from './stats.js'
import { wrk } from './wrk.js'

const HOUR = 3_600_000
/** Linux's clock ticks a second of /proc/<pid>/stat's utime and stime (USER_HZ). */
const TICKS_PER_SECOND = 100
const ATTACKERS = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']

export interface CostFigures {
  nodeArgs: string
  /** CPU of the process per cheap request (GET /v0/), the unit the others are stated in */
  baseline: { url: string, cpuMs: number, runs: number }
  /** `blockMs`: the longest the event loop was held (delay seen by a 10 ms timer) while it ran */
  routes: Array<{ operation: string, url: string, status: number, cpuMs: number, ratioToBaseline: number, runs: number, blockMs?: number }>
  adversarial: {
    seconds: number
    quiet: { requestsPerSecond: number, p50: number, p99: number, non2xx: number }
    attacked: { requestsPerSecond: number, p50: number, p99: number, non2xx: number }
    p99Ratio: number
    /** the event loop's longest delay and p99 delay during the attacked run */
    loopDelay?: { maxMs: number, p99Ms: number }
    attackerStatuses: Record<string, number>
  }
}

/** utime + stime of a process, in ms. */
function cpuMsOf (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  // After the name: state is field 3, utime 14 and stime 15 (1-based, name being 2).
  return (Number(fields[11]) + Number(fields[12])) * 1000 / TICKS_PER_SECOND
}

async function get (base: string, path: string, headers: Record<string, string>, localAddress?: string): Promise<number> {
  return await new Promise((resolve) => {
    const url = new URL(path, base)
    const req = http.get({ host: url.hostname, port: url.port, path: url.pathname + url.search, headers, agent: false, ...(localAddress !== undefined ? { localAddress } : {}) }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? 0) })
    })
    req.on('error', () => { resolve(0) })
  })
}

async function post (base: string, path: string, headers: Record<string, string>, body: Buffer | string, localAddress?: string): Promise<number> {
  return await new Promise((resolve) => {
    const url = new URL(path, base)
    const req = http.request({ method: 'POST', host: url.hostname, port: url.port, path: url.pathname, headers, agent: false, ...(localAddress !== undefined ? { localAddress } : {}) }, (res) => {
      res.resume()
      res.on('end', () => { resolve(res.statusCode ?? 0) })
    })
    req.on('error', () => { resolve(0) })
    req.end(body)
  })
}

/** wrk (C) for the user's load: its latency distribution's p50 and p99 and its request rate; 503s under attack are a figure, not a failure. */
async function userLoad (url: string, token: string, seconds: number): Promise<{ requestsPerSecond: number, p50: number, p99: number, non2xx: number }> {
  const result = await wrk(url, { connections: 2, seconds, headers: { Authorization: `Bearer ${token}` }, allowFailures: true })
  return { requestsPerSecond: round(result.requestsPerSecond, 0), p50: round(result.p50, 2), p99: round(result.p99, 2), non2xx: result.non2xx }
}

/**
 * Issue 33: the CPU the platform spends on the costliest request of each GET operation the
 * OpenAPI document lists (test/helpers/costly-requests.ts, as the cost test draws them), beside a
 * cheap request's, read from the process's own CPU counters; then a signed-in caller's latency
 * (wrk, 2 connections, an admin: unthrottled) alone and while four anonymous addresses send the
 * worst requests at their rate limit (90 a minute, the default), 4.8 MB nested bodies among them,
 * and a fifth holds 20 slow bodies.
 */
export async function benchCost (p: BenchPlatform, quick: boolean): Promise<CostFigures> {
  const child = await startAllInOne(p)
  try {
    const auth = { authorization: `Bearer ${p.token}` }
    const json = { 'content-type': 'application/json', ...auth }
    const created = await fetch(`${child.base}/v0/devices`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'cost', exposure: 'outdoor', latitude: 41.39, longitude: 2.16 }) })
    const device = (await created.json() as { id: number }).id
    const sensors = [55, 56, 14]
    const load = async (times: number[]): Promise<void> => {
      for (let at = 0; at < times.length; at += 2_000) {
        const data = times.slice(at, at + 2_000).map((time, i) => ({ recorded_at: new Date(time).toISOString(), sensors: sensors.map((id) => ({ id, value: 10 + ((i * 7 + id) % 23) })) }))
        const res = await fetch(`${child.base}/v0/devices/${device}/readings`, { method: 'POST', headers: json, body: JSON.stringify({ data }) })
        if (!res.ok) throw new Error(`posting readings: ${res.status} ${await res.text()}`)
      }
    }
    const now = Math.floor(Date.now() / HOUR) * HOUR
    progress('cost: a device with readings from 1990, a year of hours and a day every 10 s')
    await load([Date.UTC(1990, 0, 1, 6), Date.UTC(2000, 5, 1), Date.UTC(2010, 6, 15, 12)])
    await load(Array.from({ length: (quick ? 30 : 365) * 24 }, (_, i) => now - ((quick ? 30 : 365) * 24 - i) * HOUR))
    await load(Array.from({ length: quick ? 360 : 8_640 }, (_, i) => now - 3 * 24 * HOUR + i * 10_000))

    const document: unknown = await (await fetch(`${child.base}/docs/json`)).json()
    const requests = costlyRequests(readOperations(document), (operation, parameter) => {
      if (parameter.name === 'device_id' || (parameter.name === 'id' && operation.path.startsWith('/v0/devices/'))) return String(device)
      if (/user/.test(parameter.name)) return String(p.userId)
      return '1'
    })
    // prom-client's event-loop gauges cover the time since the last scrape.
    const loopDelayMs = async (): Promise<{ maxMs: number, p99Ms: number }> => ({
      maxMs: round((await child.gauge('nodejs_eventloop_lag_max_seconds')) * 1000, 1),
      p99Ms: round((await child.gauge('nodejs_eventloop_lag_p99_seconds')) * 1000, 1)
    })
    const measure = async (url: string, runs: number): Promise<{ cpuMs: number, status: number, blockMs: number }> => {
      let status = 0
      await loopDelayMs()
      const before = cpuMsOf(child.pid)
      for (let i = 0; i < runs; i++) status = await get(child.base, url, auth)
      const cpuMs = round((cpuMsOf(child.pid) - before) / runs, 2)
      return { cpuMs, status, blockMs: (await loopDelayMs()).maxMs }
    }
    const baselineRuns = quick ? 20 : 400
    await measure('/v0/', 20)
    const baseline = { url: '/v0/', runs: baselineRuns, ...await measure('/v0/', baselineRuns) }
    progress(`cost: ${requests.length} requests drawn from the document; a cheap one costs ${baseline.cpuMs} ms of CPU`)
    const worst = new Map<string, { url: string, cpuMs: number }>()
    for (const request of requests) {
      const key = `${request.operation.method} ${request.operation.path}`
      const { cpuMs } = await measure(request.url, 1)
      if ((worst.get(key)?.cpuMs ?? -1) < cpuMs) worst.set(key, { url: request.url, cpuMs })
    }
    // Each operation's worst again, several times: a single request is within a tick (10 ms) of noise.
    const runs = quick ? 1 : 5
    const routes: CostFigures['routes'] = []
    for (const [operation, { url }] of worst) {
      const again = await measure(url, runs)
      routes.push({ operation, url, status: again.status, cpuMs: again.cpuMs, ratioToBaseline: round(again.cpuMs / Math.max(baseline.cpuMs, 0.01), 1), runs, blockMs: again.blockMs })
    }
    routes.sort((a, b) => b.cpuMs - a.cpuMs)

    const seconds = quick ? 3 : 20
    const userUrl = `${child.base}/v0/devices/${device}`
    progress(`cost: the user's reads alone for ${seconds} s (wrk)`)
    const quiet = await userLoad(userUrl, p.token, seconds)
    const worstUrls = [
      `/v0/devices/${device}/readings?sensor_ids=all&rollup=1h&from=1970-01-01&to=2200-12-31&timezone=Pacific/Chatham`,
      `/v0/devices/${device}/readings?sensor_id=55&rollup=1h&from=1970-01-01&to=2200-12-31&timezone=America/New_York`,
      `/v0/devices/${device}/readings?sensor_ids=all&rollup=1d&from=1970-01-01&to=2200-12-31&timezone=Europe/Madrid`,
      `/v0/devices/${device}/readings?sensor_ids=all&rollup=1m&from=1970-01-01&to=2200-12-31&all_intervals=true&timezone=Asia/Kathmandu`,
      '/v0/readings/export?bbox=-180,-90,180,90'
    ]
    const nested = Buffer.alloc(4_800_000, '[')
    const attackerStatuses: Record<string, number> = {}
    const attack = { running: true }
    const attacker = async (address: string): Promise<void> => {
      for (let i = 0; attack.running; i++) {
        const kind = i % (worstUrls.length + 1)
        const status = kind < worstUrls.length
          ? await get(child.base, worstUrls[kind] as string, {}, address)
          : await post(child.base, '/v0/sessions', { 'content-type': 'application/json' }, nested, address)
        attackerStatuses[status] = (attackerStatuses[status] ?? 0) + 1
        await new Promise((resolve) => setTimeout(resolve, 60_000 / 90))
      }
    }
    const slow: http.ClientRequest[] = []
    const base = new URL(child.base)
    for (let i = 0; i < 20; i++) {
      const req = http.request({ host: base.hostname, port: base.port, method: 'POST', path: '/v0/sessions', headers: { 'content-type': 'application/json', 'content-length': '1000' }, localAddress: '127.0.0.6', agent: false })
      req.on('error', () => {})
      req.write('{')
      slow.push(req)
    }
    const trickle = setInterval(() => { for (const req of slow) if (!req.destroyed) req.write(' ') }, 2_000)
    const attackers = ATTACKERS.map(attacker)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    progress(`cost: the user's reads for ${seconds} s while the attack runs`)
    await loopDelayMs()
    const attacked = await userLoad(userUrl, p.token, seconds)
    const loopDelay = await loopDelayMs()
    attack.running = false
    clearInterval(trickle)
    for (const req of slow) req.destroy()
    await Promise.all(attackers)
    return {
      nodeArgs: child.nodeArgs,
      baseline,
      routes,
      adversarial: { seconds, quiet, attacked, p99Ratio: round(attacked.p99 / quiet.p99, 2), loopDelay, attackerStatuses }
    }
  } finally {
    await child.stop()
  }
}
