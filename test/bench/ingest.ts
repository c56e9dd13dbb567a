import Fastify from 'fastify'
import type { ReadingRow } from '@esp/db'
import { copyRows, makeDevices, type BenchPlatform } from './setup.js'
import { progress, round, runScript } from './stats.js'

export interface IngestFigures {
  batch500: { devices: number, values: number, seconds: number, valuesPerSecond: number }
  kit12: { devices: number, posts: number, values: number, postsPerSecond: number, valuesPerSecond: number }
  copy: { rows: number, rowsPerSecond: number }
  ratioToCopy: number
  /** the same fleet against a bare Fastify route that only parses the bodies and COPYs their rows */
  bareRoute: { valuesPerSecond: number, ratioToCopy: number }
  /** case 6: RSS of this all-in-one process (api, ingest, exporter) before and at its peak under the fleet's load */
  memory: { idleRssMb: number, peakRssMb: number }
}

const SENSORS_12 = [10, 14, 53, 55, 56, 58, 87, 88, 89, 112, 113, 220]

/**
 * The ceiling every ingest figure is divided by: a plain COPY of as many rows (devices x rows
 * each, a minute apart) into the same readings table, in the same run. Rows per second.
 */
export async function copyCeiling (p: BenchPlatform, deviceCount: number, rowsPerDevice: number, start: number): Promise<number> {
  const values = deviceCount * rowsPerDevice
  progress(`COPY of ${values} rows (the ceiling)`)
  const copyDevices = await makeDevices(p.database, p.userId, deviceCount)
  const lines: string[] = []
  copyDevices.forEach((device, d) => {
    for (let i = 0; i < rowsPerDevice; i++) lines.push(`${device}\t${SENSORS_12[d % SENSORS_12.length] ?? 55}\t${new Date(start + i * 60_000).toISOString()}\t${20 + Math.sin(i)}\t${20 + Math.sin(i)}\n`)
  })
  const t0 = performance.now()
  const writable = await p.database.sql`copy readings (device_id, sensor_id, recorded_at, value, raw_value) from stdin`.writable()
  await new Promise<void>((resolve, reject) => {
    writable.on('error', reject)
    writable.on('finish', resolve)
    const chunk = 10_000
    for (let i = 0; i < lines.length; i += chunk) writable.write(lines.slice(i, i + chunk).join(''))
    writable.end()
  })
  return values / ((performance.now() - t0) / 1000)
}

/**
 * What Node alone reaches with these bodies on this machine: a bare Fastify route that parses each
 * body (Fastify's JSON parser), maps its entries to rows with no validation, sensor resolution,
 * tiers or latest values, and commits them by the write path's binary COPY, acknowledging after
 * the commit. Not the platform: an upper bound for any version of it, which says how much of the
 * gap to COPY is the platform's own. Readings per second of the same fleet.
 */
async function bareRoute (p: BenchPlatform, deviceCount: number, batches: number, start: number): Promise<number> {
  const app = Fastify({ bodyLimit: 50 * 1024 * 1024 })
  app.post<{ Params: { id: string }, Body: { data: { recorded_at: string, sensors: { id: number, value: number }[] }[] } }>('/v0/devices/:id/readings', async (request) => {
    const deviceId = Number(request.params.id)
    const rows: ReadingRow[] = request.body.data.map((entry) => {
      const value = entry.sensors[0]?.value ?? 0
      return { deviceId, sensorId: entry.sensors[0]?.id ?? 0, recordedAt: new Date(entry.recorded_at), value, rawValue: value }
    })
    await copyRows(p.database, rows)
    return { id: 'ok' }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  try {
    const address = app.server.address()
    const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
    const devices = await makeDevices(p.database, p.userId, deviceCount)
    return deviceCount * batches * 500 / await fleet(p, devices, batches, 'batch500', start, base)
  } finally {
    await app.close()
  }
}

/** Runs the fleet simulator in a child process against `base` and returns its wall time in seconds. */
async function fleet (p: BenchPlatform, devices: number[], batches: number, mode: 'batch500' | 'kit12', start: number, base = p.base): Promise<number> {
  return (await runScript<{ seconds: number }>('fleet.ts', { base, token: p.token, devices, batches, mode, start }, 'the fleet simulator')).seconds
}

/**
 * Case 1: a fleet posting batches of 500 readings (one sensor per entry, as the Python connector
 * does) and kits posting one timestamp of 12 sensors, acknowledged after commit; against a plain
 * COPY of as many rows into the same readings table in the same run.
 */
export async function benchIngest (p: BenchPlatform, quick: boolean): Promise<IngestFigures> {
  const deviceCount = quick ? 2 : 16
  const batches = quick ? 2 : 25
  const devices = await makeDevices(p.database, p.userId, deviceCount)
  const start = Date.UTC(2026, 0, 1)
  const idleRss = process.memoryUsage().rss
  let peakRss = idleRss
  const sampler = setInterval(() => { peakRss = Math.max(peakRss, process.memoryUsage().rss) }, 20)
  progress(`ingest: ${deviceCount} devices x ${batches} batches of 500`)
  const seconds = await fleet(p, devices, batches, 'batch500', start)
  const values = deviceCount * batches * 500

  const kits = await makeDevices(p.database, p.userId, deviceCount)
  const posts = quick ? 20 : 200
  progress(`ingest: ${deviceCount} kits x ${posts} posts of 12 sensors`)
  const kitSeconds = await fleet(p, kits, posts, 'kit12', start)
  clearInterval(sampler)

  progress('ingest: the same fleet against a bare route (parse and COPY only)')
  const bareRate = await bareRoute(p, deviceCount, batches, start)
  const copyRate = await copyCeiling(p, deviceCount, batches * 500, start)
  const valuesPerSecond = values / seconds
  return {
    batch500: { devices: deviceCount, values, seconds: round(seconds), valuesPerSecond: Math.round(valuesPerSecond) },
    kit12: { devices: deviceCount, posts: deviceCount * posts, values: deviceCount * posts * 12, postsPerSecond: Math.round(deviceCount * posts / kitSeconds), valuesPerSecond: Math.round(deviceCount * posts * 12 / kitSeconds) },
    copy: { rows: values, rowsPerSecond: Math.round(copyRate) },
    ratioToCopy: round(valuesPerSecond / copyRate, 3),
    bareRoute: { valuesPerSecond: Math.round(bareRate), ratioToCopy: round(bareRate / copyRate, 3) },
    memory: { idleRssMb: round(idleRss / 2 ** 20, 1), peakRssMb: round(peakRss / 2 ** 20, 1) }
  }
}
