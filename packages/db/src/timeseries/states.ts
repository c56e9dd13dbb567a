import type { ReadingRow } from './engine.js'

/** Mergeable state of one bucket of one device and sensor (times in epoch ms). */
export interface AggregateRow {
  deviceId: number
  sensorId: number
  bucket: number
  count: number
  mean: number
  m2: number
  sum: number
  min: number
  max: number
  firstAt: number
  first: number
  lastAt: number
  last: number
}

/**
 * Folds readings into per-bucket states with Welford's update, sorted by (device, sensor, bucket).
 * Buckets are `floor(t / ms) * ms`: the tiers are epoch-aligned hours and days.
 */
export function aggregateByBucket (rows: ReadingRow[], ms: number): AggregateRow[] {
  const states = new Map<string, AggregateRow>()
  for (const row of rows) {
    const at = row.recordedAt.getTime()
    const bucket = Math.floor(at / ms) * ms
    const key = `${row.deviceId}:${row.sensorId}:${bucket}`
    const v = row.value
    const s = states.get(key)
    if (s === undefined) {
      states.set(key, { deviceId: row.deviceId, sensorId: row.sensorId, bucket, count: 1, mean: v, m2: 0, sum: v, min: v, max: v, firstAt: at, first: v, lastAt: at, last: v })
      continue
    }
    s.count += 1
    const delta = v - s.mean
    s.mean += delta / s.count
    s.m2 += delta * (v - s.mean)
    s.sum += v
    if (v < s.min) s.min = v
    if (v > s.max) s.max = v
    if (at < s.firstAt) { s.firstAt = at; s.first = v }
    if (at > s.lastAt) { s.lastAt = at; s.last = v }
  }
  return [...states.values()].sort((a, b) => a.deviceId - b.deviceId || a.sensorId - b.sensorId || a.bucket - b.bucket)
}
