import { compareReadings, type ReadingRow } from './engine.js'

/**
 * A mergeable summary of the readings in one bucket, so that buckets can be computed in pieces
 * (per partition, per pre-aggregated chunk) and combined in any order. The variance part follows
 * Welford and Chan et al.: the naive sum of squares loses every significant digit for readings such
 * as a pressure of 101325 ± 0.01 Pa.
 */
export interface AggregateState {
  count: number
  mean: number
  /** sum of squared deviations from the mean */
  m2: number
  sum: number
  min: number
  max: number
  /** epoch ms of the earliest reading */
  firstAt: number
  first: number
  /** epoch ms of the latest reading */
  lastAt: number
  last: number
}

export function stateOf (at: number, value: number): AggregateState {
  return { count: 1, mean: value, m2: 0, sum: value, min: value, max: value, firstAt: at, first: value, lastAt: at, last: value }
}

/** Chan et al.'s parallel combination. On equal times `a` keeps its first and last. */
export function mergeStates (a: AggregateState, b: AggregateState): AggregateState {
  if (b.count === 0) return a
  if (a.count === 0) return b
  const merged = { ...a }
  mergeInto(merged, b)
  return merged
}

/** mergeStates into `a` itself, for folds of thousands of buckets that make no object each. */
export function mergeInto (a: AggregateState, b: AggregateState): void {
  if (b.count === 0) return
  if (a.count === 0) {
    copyState(a, b)
    return
  }
  const count = a.count + b.count
  const delta = b.mean - a.mean
  a.mean += delta * (b.count / count)
  a.m2 += b.m2 + delta * delta * (a.count * b.count / count)
  a.count = count
  a.sum += b.sum
  a.min = Math.min(a.min, b.min)
  a.max = Math.max(a.max, b.max)
  if (b.firstAt < a.firstAt) { a.firstAt = b.firstAt; a.first = b.first }
  if (b.lastAt > a.lastAt) { a.lastAt = b.lastAt; a.last = b.last }
}

function copyState (into: AggregateState, from: AggregateState): void {
  into.count = from.count
  into.mean = from.mean
  into.m2 = from.m2
  into.sum = from.sum
  into.min = from.min
  into.max = from.max
  into.firstAt = from.firstAt
  into.first = from.first
  into.lastAt = from.lastAt
  into.last = from.last
}

/** Welford's update of a state with one more reading. */
export function addValue (s: AggregateState, at: number, v: number): void {
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

/** Mergeable state of one bucket of one device and sensor (times in epoch ms). */
export interface AggregateRow extends AggregateState {
  deviceId: number
  sensorId: number
  bucket: number
}

/**
 * Folds readings into per-bucket states with Welford's update, sorted by (device, sensor, bucket).
 * Buckets are `floor(t / ms) * ms`: the tiers are epoch-aligned hours and days. The write path
 * hands its rows over sorted, so a bucket's readings are neighbours: one pass, no map of keys.
 */
export function aggregateByBucket (rows: readonly ReadingRow[], ms: number): AggregateRow[] {
  let ordered = rows
  for (let i = 1; i < rows.length; i++) {
    if (compareReadings(rows[i - 1] as ReadingRow, rows[i] as ReadingRow) > 0) { ordered = [...rows].sort(compareReadings); break }
  }
  const states: AggregateRow[] = []
  let last: AggregateRow | undefined
  for (const row of ordered) {
    const at = row.recordedAt.getTime()
    const bucket = Math.floor(at / ms) * ms
    if (last !== undefined && last.bucket === bucket && last.sensorId === row.sensorId && last.deviceId === row.deviceId) {
      addValue(last, at, row.value)
      continue
    }
    const v = row.value
    last = { deviceId: row.deviceId, sensorId: row.sensorId, bucket, count: 1, mean: v, m2: 0, sum: v, min: v, max: v, firstAt: at, first: v, lastAt: at, last: v }
    states.push(last)
  }
  return states
}
