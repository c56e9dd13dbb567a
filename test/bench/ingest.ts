import { makeDevices, type BenchPlatform } from './setup.js'
import { progress, round } from './stats.js'

export interface IngestFigures {
  batch500: { devices: number, values: number, seconds: number, valuesPerSecond: number }
  kit12: { devices: number, posts: number, values: number, postsPerSecond: number, valuesPerSecond: number }
  copy: { rows: number, rowsPerSecond: number }
  ratioToCopy: number
}

const SENSORS_12 = [10, 14, 53, 55, 56, 58, 87, 88, 89, 112, 113, 220]

async function post (p: BenchPlatform, device: number, data: unknown): Promise<void> {
  const res = await fetch(`${p.base}/v0/devices/${device}/readings`, { method: 'POST', headers: { authorization: `Bearer ${p.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ data }) })
  if (res.status !== 200) throw new Error(`post failed: ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
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
  progress(`ingest: ${deviceCount} devices x ${batches} batches of 500`)
  const t0 = performance.now()
  await Promise.all(devices.map(async (device, d) => {
    for (let b = 0; b < batches; b++) {
      const data = Array.from({ length: 500 }, (_, i) => ({
        recorded_at: new Date(start + (b * 500 + i) * 60_000).toISOString(),
        sensors: [{ id: SENSORS_12[d % SENSORS_12.length] ?? 55, value: 20 + Math.sin(i) }]
      }))
      await post(p, device, data)
    }
  }))
  const seconds = (performance.now() - t0) / 1000
  const values = deviceCount * batches * 500

  const kits = await makeDevices(p.database, p.userId, deviceCount)
  const posts = quick ? 20 : 200
  progress(`ingest: ${deviceCount} kits x ${posts} posts of 12 sensors`)
  const t1 = performance.now()
  await Promise.all(kits.map(async (device) => {
    for (let i = 0; i < posts; i++) {
      await post(p, device, [{ recorded_at: new Date(start + i * 60_000).toISOString(), sensors: SENSORS_12.map((id) => ({ id, value: id + i / 10 })) }])
    }
  }))
  const kitSeconds = (performance.now() - t1) / 1000

  progress(`ingest: COPY of ${values} rows`)
  const copyDevices = await makeDevices(p.database, p.userId, deviceCount)
  const lines: string[] = []
  copyDevices.forEach((device, d) => {
    for (let i = 0; i < batches * 500; i++) lines.push(`${device}\t${SENSORS_12[d % SENSORS_12.length] ?? 55}\t${new Date(start + i * 60_000).toISOString()}\t${20 + Math.sin(i)}\t${20 + Math.sin(i)}\n`)
  })
  const t2 = performance.now()
  const writable = await p.database.sql`copy readings (device_id, sensor_id, recorded_at, value, raw_value) from stdin`.writable()
  await new Promise<void>((resolve, reject) => {
    writable.on('error', reject)
    writable.on('finish', resolve)
    const chunk = 10_000
    for (let i = 0; i < lines.length; i += chunk) writable.write(lines.slice(i, i + chunk).join(''))
    writable.end()
  })
  const copySeconds = (performance.now() - t2) / 1000
  const valuesPerSecond = values / seconds
  const copyRate = values / copySeconds
  return {
    batch500: { devices: deviceCount, values, seconds: round(seconds), valuesPerSecond: Math.round(valuesPerSecond) },
    kit12: { devices: deviceCount, posts: deviceCount * posts, values: deviceCount * posts * 12, postsPerSecond: Math.round(deviceCount * posts / kitSeconds), valuesPerSecond: Math.round(deviceCount * posts * 12 / kitSeconds) },
    copy: { rows: values, rowsPerSecond: Math.round(copyRate) },
    ratioToCopy: round(valuesPerSecond / copyRate, 3)
  }
}
