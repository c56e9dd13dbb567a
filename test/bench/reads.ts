import Fastify from 'fastify'
import type { BenchPlatform } from './setup.js'
import { progress, round, runScript } from './stats.js'

interface Load { requests: number, failures: number, requestsPerSecond: number, p50: number, p95: number, p99: number }

export interface RouteFigures { requestsPerSecond: number, p50: number, p95: number, p99: number, ratioToBaseline: number }

export interface ReadFigures {
  devices: number
  concurrency: number
  seconds: number
  baseline: { requestsPerSecond: number, p50: number, p99: number }
  /** with the admin's Bearer token */
  device: RouteFigures
  list: RouteFigures
  /** the same requests made anonymously: what authentication adds is the difference */
  anonymous: { device: RouteFigures, list: RouteFigures }
}

async function load (url: string, headers: Record<string, string>, concurrency: number, seconds: number): Promise<Load> {
  const result = await runScript<Load>('load.ts', { url, headers, concurrency, seconds }, 'the load generator')
  if (result.failures > 0) throw new Error(`${url}: ${result.failures} requests failed`)
  return result
}

/**
 * Case 4, reads: `GET /v0/devices/:id` (a device with 12 sensors and their latest values) and
 * `GET /v0/devices` (a page of 25) through the whole platform, against a bare Fastify route on the
 * same pool that looks one device row up by id: what the framework and one round trip cost.
 */
export async function benchReads (p: BenchPlatform, quick: boolean): Promise<ReadFigures> {
  const devices = quick ? 30 : 1000
  const concurrency = quick ? 2 : 16
  const seconds = quick ? 1 : 10
  progress(`reads: seeding ${devices} devices with 12 latest values each`)
  const [first] = await p.database.sql<{ id: number }[]>`
    with made as (
      insert into devices (owner_id, name, description, kit_id, latitude, longitude, exposure, state, city, country_code, last_reading_at, mac_address)
      select ${p.userId}, 'read ' || g, 'a bench device', 26, 41 + g / 10000.0, 2 + g / 10000.0, 'outdoor', 'has_published', 'Barcelona', 'ES', now(),
             lpad(to_hex(g), 12, '0')::macaddr
      from generate_series(1, ${devices}) g returning id),
    latest as (
      insert into latest_readings (device_id, sensor_id, recorded_at, value, raw_value)
      select made.id, s, now(), 20.5, 20.5 from made, unnest(array[10,14,53,55,56,58,87,88,89,112,113,114]) s returning device_id)
    select min(device_id) as id from latest`
  await p.database.sql`insert into components (device_id, sensor_id) select device_id, sensor_id from latest_readings on conflict do nothing`
  const deviceId = first?.id ?? 0
  const bare = Fastify({ logger: false })
  bare.get<{ Params: { id: string } }>('/lookup/:id', async (request) => {
    const [row] = await p.database.sql`select id, name, description, state, last_reading_at from devices where id = ${Number(request.params.id)}`
    return row
  })
  await bare.listen({ port: 0, host: '127.0.0.1' })
  const address = bare.server.address()
  const bareBase = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  const auth = { authorization: `Bearer ${p.token}` }
  try {
    progress(`reads: ${concurrency} clients for ${seconds} s each: bare lookup, GET /v0/devices/:id and GET /v0/devices with a token and anonymously`)
    const baseline = await load(`${bareBase}/lookup/${deviceId}`, {}, concurrency, seconds)
    const device = await load(`${p.base}/v0/devices/${deviceId}`, auth, concurrency, seconds)
    const list = await load(`${p.base}/v0/devices?per_page=25`, auth, concurrency, seconds)
    const anonymousDevice = await load(`${p.base}/v0/devices/${deviceId}`, {}, concurrency, seconds)
    const anonymousList = await load(`${p.base}/v0/devices?per_page=25`, {}, concurrency, seconds)
    const figures = (l: Load): RouteFigures => ({
      requestsPerSecond: Math.round(l.requestsPerSecond), p50: round(l.p50), p95: round(l.p95), p99: round(l.p99), ratioToBaseline: round(l.requestsPerSecond / baseline.requestsPerSecond, 3)
    })
    return {
      devices,
      concurrency,
      seconds,
      baseline: { requestsPerSecond: Math.round(baseline.requestsPerSecond), p50: round(baseline.p50), p99: round(baseline.p99) },
      device: figures(device),
      list: figures(list),
      anonymous: { device: figures(anonymousDevice), list: figures(anonymousList) }
    }
  } finally {
    await bare.close()
  }
}
