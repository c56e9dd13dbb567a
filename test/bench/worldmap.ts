import { request } from 'node:http'
import { gzipSync } from 'node:zlib'
import type { BenchPlatform } from './setup.js'
import { percentile, progress, round, timeRuns } from './stats.js'

export interface WorldMapFigures {
  devices: number
  p50: number
  p95: number
  rebuildMs: number
  jsonBytes: number
  gzipBytes: number
  brBytes: number
  /**
   * The same map with the contract's fields only (contract: World-map device), gzipped as the
   * route does: what moving every other field (the clients' location, hardware, user_tags and
   * last_reading_at) to another route would leave.
   */
  contractOnlyGzipBytes: number
  baselineP50: number
  ratioToBaseline: number
}

/** GET over a keep-alive-free socket, returning the bytes as sent (still compressed). */
async function getRaw (url: string, headers: Record<string, string>): Promise<{ status: number, bytes: number }> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let bytes = 0
      res.on('data', (chunk: Buffer) => { bytes += chunk.length })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, bytes }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * `count` located public devices with 12 latest values each, the two and one decimals sensors
 * report, seeded in SQL (the map reads them, how they were written does not matter here); numbered
 * from `first`, so that a later call adds others at other places.
 */
export async function seedMapDevices (p: BenchPlatform, count: number, first = 1): Promise<void> {
  await p.database.sql`
    with made as (
      insert into devices (owner_id, name, description, kit_id, latitude, longitude, exposure, state, city, country_code, last_reading_at)
      select ${p.userId}, 'map ' || g, 'a bench device', 26, -60 + (g * 7919 % 12000) / 100.0, -179 + (g * 104729 % 35800) / 100.0,
             case when g % 3 = 0 then 'indoor' else 'outdoor' end, 'has_published', 'Somewhere', 'ES', now() - (g % 120) * interval '1 minute'
      from generate_series(${first}::int, ${first + count - 1}::int) g returning id)
    insert into latest_readings (device_id, sensor_id, recorded_at, value, raw_value)
    select made.id, s, now(), round((random() * 100)::numeric, 2), round((random() * 1000)::numeric, 1) from made, unnest(array[10,14,53,55,56,58,87,88,89,112,113,114]) s`
}

/** The world-map device's fields as the contract lists them. */
const CONTRACT_FIELDS = ['id', 'name', 'description', 'owner_id', 'owner_username', 'latitude', 'longitude', 'city', 'country_code', 'kit_id', 'state', 'system_tags', 'exposure', 'added_at', 'data']

/**
 * Case 4, world map: N located devices with 12 latest values each (seedMapDevices). p50 of the gzip map in steady state, next to
 * the p50 of the liveness route on the same server; the rebuild after a device changes; sizes.
 */
export async function benchWorldMap (p: BenchPlatform, quick: boolean): Promise<WorldMapFigures> {
  const devices = quick ? 200 : 10_000
  progress(`world map: seeding ${devices} devices`)
  await seedMapDevices(p, devices)
  const url = `${p.base}/v0/devices/world_map`
  const gz = { 'accept-encoding': 'gzip, deflate, br;q=0' }
  const t0 = performance.now()
  const first = await getRaw(url, gz)
  const rebuildMs = round(performance.now() - t0)
  if (first.status !== 200) throw new Error(`world map: ${first.status}`)
  const runs = quick ? 10 : 200
  const times = await timeRuns(runs, 10, async () => { await getRaw(url, gz) })
  const baseline = await timeRuns(runs, 10, async () => { await getRaw(`${p.base}/health/live`, {}) })
  const plain = await getRaw(url, {})
  const br = await getRaw(url, { 'accept-encoding': 'br' })
  const contractOnly = (await (await fetch(url)).json() as Array<Record<string, unknown>>)
    .map((item) => Object.fromEntries(CONTRACT_FIELDS.map((key) => [key, item[key]])))
  const figures = {
    devices,
    p50: round(percentile(times, 50)),
    p95: round(percentile(times, 95)),
    rebuildMs,
    jsonBytes: plain.bytes,
    gzipBytes: first.bytes,
    brBytes: br.bytes,
    contractOnlyGzipBytes: gzipSync(JSON.stringify(contractOnly), { level: 6 }).length,
    baselineP50: round(percentile(baseline, 50)),
    ratioToBaseline: 0
  }
  figures.ratioToBaseline = round(figures.p50 / figures.baselineP50)
  progress(`world map: p50 ${figures.p50} ms, gzip ${figures.gzipBytes} bytes`)
  return figures
}
