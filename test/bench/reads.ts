import Fastify from 'fastify'
import { compileListQuery, deviceService, loadDevice, presentDevice, presentDevices, presentUser } from '@esp/domain'
import type { BenchPlatform } from './setup.js'
import { progress, round } from './stats.js'
import { ensureWrk, wrk } from './wrk.js'

/** A side's slices combined (interleaved()): latencies in ms. */
interface Load { requests: number, seconds: number, requestsPerSecond: number, p50: number, p75: number, p90: number, p99: number }

export interface LoadFigures { requestsPerSecond: number, p50: number, p90: number, p99: number, ratioToBaseline: number }

export interface RouteFigures {
  route: string
  /** issue 37's target against the bare lookup (anonymous) */
  target: number | null
  /** the bare lookup, measured in the slices alternating with this route's */
  bareRequestsPerSecond: number
  bare: { requestsPerSecond: number, p50: number, p99: number }
  /**
   * The same statements and representation on the bare Fastify server (no platform: no hooks,
   * no schema serializer, no ETag), anonymous: what any route of this design reaches here at best.
   */
  floor: LoadFigures | null
  anonymous: LoadFigures
  bearer: LoadFigures
  /** the same request with a citizen's Bearer token against it made anonymously: target >= 0.85 */
  bearerToAnonymous: number
}

export interface ReadFigures {
  /** the load client: wrk (C), one thread */
  client: 'wrk'
  devices: number
  devicesPerOwner: number
  /** wrk's connections (-c) */
  concurrency: number
  /** per route and side, in `slices` slices */
  seconds: number
  slices: number
  /** the bare lookup over every route's slices: p50 the request-weighted mean, p99 the largest of any route's */
  baseline: { requestsPerSecond: number, p50: number, p99: number }
  routes: RouteFigures[]
}

interface Side { url: string, headers: Record<string, string> }

/**
 * Loads compared by their ratios, in alternating slices (A B C, B C A, C A B, ...) rather than one
 * after the other: on a machine shared with other work, load that comes and goes then weighs on
 * each alike, the bare baseline included. Every slice is a wrk run of its own (one thread,
 * `connections` keep-alive connections); an answer of 400 or above or a socket error fails the bench.
 *
 * A side's slices combined: requests/s as its total requests over its total seconds; each
 * percentile (p50, p75, p90, p99) as the mean of the slices' percentiles weighted by their request
 * counts (wrk reports percentiles, not each latency, so the pooled percentile cannot be had; the
 * weighted mean is near it when the slices are alike). Not the max for p99: one slice's hiccup from
 * other work on the machine would then stand for the whole side.
 */
async function interleaved (sides: Side[], connections: number, seconds: number, slices: number): Promise<Load[]> {
  // One request each first: a route that answers an error fails here, before any slice, and the caches are warm.
  for (const side of sides) {
    const res = await fetch(side.url, { headers: side.headers })
    await res.arrayBuffer()
    if (!res.ok) throw new Error(`${side.url}: ${res.status} before the load`)
  }
  // wrk's -d is whole seconds.
  const sliceSeconds = Math.max(1, Math.round(seconds / slices))
  const totals = sides.map(() => ({ requests: 0, seconds: 0, p50: 0, p75: 0, p90: 0, p99: 0 }))
  for (let i = 0; i < slices; i++) {
    for (let k = 0; k < sides.length; k++) {
      const index = (i + k) % sides.length
      const side = sides[index]
      const total = totals[index]
      if (side === undefined || total === undefined) continue
      const result = await wrk(side.url, { connections, seconds: sliceSeconds, headers: side.headers })
      total.requests += result.requests
      total.seconds += result.seconds
      // Weighted sums here, divided by the requests below.
      total.p50 += result.p50 * result.requests
      total.p75 += result.p75 * result.requests
      total.p90 += result.p90 * result.requests
      total.p99 += result.p99 * result.requests
    }
  }
  return totals.map((t) => ({
    requests: t.requests,
    seconds: t.seconds,
    requestsPerSecond: t.requests / t.seconds,
    p50: t.p50 / t.requests,
    p75: t.p75 / t.requests,
    p90: t.p90 / t.requests,
    p99: t.p99 / t.requests
  }))
}

/**
 * Owners of the seeded fleet have five devices each, as citizens and small groups do: every
 * device lists its owner's device ids, so one owner of the whole fleet would make each device
 * 14 KB of ids, which no real device shows (the bench ran that way until 2026-11-26).
 */
const DEVICES_PER_OWNER = 5

/**
 * Case 4, reads: a device with 12 sensors and their latest values, a page of 25 devices, a sensor,
 * a user, a kit and the API root, each anonymously and with a citizen's Bearer token, through the
 * whole platform, against a bare Fastify route on the same pool that looks one device row up by
 * id: what the framework and one round trip cost. Every side is loaded by wrk (C): a Node client's
 * own CPU capped the bare lookup on a 2-core machine and flattered the routes' ratios. Rate limits
 * are on, with a limit configured for the run (setup.ts) that this traffic stays under.
 */
export async function benchReads (p: BenchPlatform, quick: boolean): Promise<ReadFigures> {
  const devices = quick ? 30 : 1000
  const concurrency = quick ? 2 : 16
  const seconds = quick ? 1 : 10
  const slices = quick ? 1 : 5
  await ensureWrk()
  const owners = Math.ceil(devices / DEVICES_PER_OWNER)
  progress(`reads: seeding ${devices} devices with 12 latest values each, ${DEVICES_PER_OWNER} to each of ${owners} owners`)
  await p.database.sql`insert into users (username, email) select 'fleet' || g, 'fleet' || g || '@example.org' from generate_series(1, ${owners}) g`
  const [first] = await p.database.sql<{ id: number }[]>`
    with owners as (select row_number() over (order by id) - 1 as n, id from users where username like 'fleet%'),
    made as (
      insert into devices (owner_id, name, description, kit_id, latitude, longitude, exposure, state, city, country_code, last_reading_at, mac_address)
      select owners.id, 'read ' || g, 'a bench device', 26, 41 + g / 10000.0, 2 + g / 10000.0, 'outdoor', 'has_published', 'Barcelona', 'ES', now(),
             lpad(to_hex(g), 12, '0')::macaddr
      from generate_series(1, ${devices}) g join owners on owners.n = (g - 1) / ${DEVICES_PER_OWNER} returning id),
    latest as (
      insert into latest_readings (device_id, sensor_id, recorded_at, value, raw_value)
      select made.id, s, now(), 20.5, 20.5 from made, unnest(array[10,14,53,55,56,58,87,88,89,112,113,114]) s returning device_id)
    select min(device_id) as id from latest`
  await p.database.sql`insert into components (device_id, sensor_id) select device_id, sensor_id from latest_readings on conflict do nothing`
  const deviceId = first?.id ?? 0
  // As autovacuum would by then: statistics and the visibility map the list's count reads by an
  // index-only scan (unvacuumed, a freshly seeded table is counted row by row in its heap).
  await p.database.sql`vacuum analyze devices, users, components, latest_readings`
  // A citizen, as most callers are: an admin would skip the rate limiter and flatter the ratio.
  const json = { 'content-type': 'application/json' }
  await fetch(`${p.base}/v0/users`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'reader', email: 'reader@example.org', password: 'reader password' }) })
  const session = await fetch(`${p.base}/v0/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'reader', password: 'reader password' }) })
  const { access_token: token } = await session.json() as { access_token: string }
  // A user as most are, with a device of their own.
  const [reader] = await p.database.sql<{ id: number }[]>`select id from users where username = 'reader'`
  const readerId = reader?.id ?? 0
  await p.database.sql`update devices set owner_id = ${readerId} where id = ${deviceId + 1}`
  const bare = Fastify({ logger: false })
  bare.get<{ Params: { id: string } }>('/lookup/:id', async (request) => {
    const [row] = await p.database.sql`select id, name, description, state, last_reading_at from devices where id = ${Number(request.params.id)}`
    return row
  })
  // The floor routes: the platform's own statements and presenters, with nothing around them.
  const presenting = () => ({ viewer: null, baseUrl: 'http://bench', now: new Date() })
  bare.get<{ Params: { id: string } }>('/floor/devices/:id', async (request) => presentDevice(await loadDevice(p.database, request.params.id, null), presenting()))
  const pageQuery = compileListQuery(new URLSearchParams('per_page=25'), deviceService.deviceFilters, { admin: false })
  bare.get('/floor/devices', async () => presentDevices((await deviceService.listDevices(p.database, pageQuery, {}, null)).rows, presenting()))
  bare.get<{ Params: { id: string } }>('/floor/users/:id', async (request) => {
    const { user, devices } = await deviceService.userWithDevices(p.database, Number(request.params.id), null)
    return presentUser(user, { viewer: null, baseUrl: 'http://bench', devices: presentDevices(devices, presenting()) })
  })
  await bare.listen({ port: 0, host: '127.0.0.1' })
  const address = bare.server.address()
  const bareBase = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const routes: Array<{ route: string, path: string, target: number | null, floor?: string }> = [
    { route: 'GET /v0/devices/:id', path: `/v0/devices/${deviceId}`, target: 0.5, floor: `/floor/devices/${deviceId}` },
    { route: 'GET /v0/devices (25 a page)', path: '/v0/devices?per_page=25', target: 0.15, floor: '/floor/devices' },
    { route: 'GET /v0/sensors/:id', path: '/v0/sensors/55', target: 1 },
    { route: 'GET /v0/users/:id', path: `/v0/users/${readerId}`, target: 0.5, floor: `/floor/users/${readerId}` },
    { route: 'GET /v0/kits/:id', path: '/v0/kits/26', target: 1 },
    { route: 'GET /v0/', path: '/v0/', target: 1 }
  ]
  try {
    progress(`reads: wrk, ${concurrency} connections for ${seconds} s each (${slices} slices): ${routes.length} routes anonymous and with a Bearer token, each beside the bare lookup`)
    const bareSide: Side = { url: `${bareBase}/lookup/${deviceId}`, headers: {} }
    const baselines: Load[] = []
    const results: RouteFigures[] = []
    for (const { route, path, target, floor } of routes) {
      const sides: Side[] = [bareSide, { url: `${p.base}${path}`, headers: {} }, { url: `${p.base}${path}`, headers: { authorization: `Bearer ${token}` } }]
      if (floor !== undefined) sides.push({ url: `${bareBase}${floor}`, headers: {} })
      const [bare, anonymous, bearer, floorLoad] = await interleaved(sides, concurrency, seconds, slices) as [Load, Load, Load, Load | undefined]
      baselines.push(bare)
      const figures = (l: Load): LoadFigures => ({
        requestsPerSecond: Math.round(l.requestsPerSecond), p50: round(l.p50), p90: round(l.p90), p99: round(l.p99), ratioToBaseline: round(l.requestsPerSecond / bare.requestsPerSecond, 3)
      })
      const figure: RouteFigures = {
        route,
        target,
        bareRequestsPerSecond: Math.round(bare.requestsPerSecond),
        bare: { requestsPerSecond: Math.round(bare.requestsPerSecond), p50: round(bare.p50), p99: round(bare.p99) },
        floor: floorLoad === undefined ? null : figures(floorLoad),
        anonymous: figures(anonymous),
        bearer: figures(bearer),
        bearerToAnonymous: round(bearer.requestsPerSecond / anonymous.requestsPerSecond, 3)
      }
      results.push(figure)
      progress(`reads: ${route}: bare ${figure.bareRequestsPerSecond}/s, anonymous ${figure.anonymous.requestsPerSecond}/s (${figure.anonymous.ratioToBaseline}), Bearer ${figure.bearer.requestsPerSecond}/s (${figure.bearerToAnonymous} of anonymous)`)
    }
    const all = baselines.reduce((sum, b) => ({ requests: sum.requests + b.requests, seconds: sum.seconds + b.seconds, p50: sum.p50 + b.p50 * b.requests }), { requests: 0, seconds: 0, p50: 0 })
    return {
      client: 'wrk',
      devices,
      devicesPerOwner: DEVICES_PER_OWNER,
      concurrency,
      seconds,
      slices,
      baseline: { requestsPerSecond: Math.round(all.requests / all.seconds), p50: round(all.p50 / all.requests), p99: round(Math.max(...baselines.map((b) => b.p99))) },
      routes: results
    }
  } finally {
    await bare.close()
  }
}
