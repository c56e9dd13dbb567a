import { type AggregateState, mergeStates, stateOf } from '@esp/db'
import { bucketStart, type Rollup } from './rollup.js'

export { type AggregateState, mergeStates, stateOf }

export type RollupFunction = 'avg' | 'max' | 'min' | 'sum' | 'count' | 'dev' | 'first' | 'last'

export const rollupFunctions: readonly RollupFunction[] = ['avg', 'max', 'min', 'sum', 'count', 'dev', 'first', 'last']

export function isRollupFunction (name: string): name is RollupFunction {
  return (rollupFunctions as readonly string[]).includes(name)
}

/** The value of `fn`; dev is the sample standard deviation, null below two readings (stddev_samp). */
export function finalize (state: AggregateState, fn: RollupFunction): number | null {
  if (fn === 'count') return state.count
  if (state.count === 0) return null
  switch (fn) {
    // sum/count is as accurate as the running mean and keeps round data round (22.5, not
    // 22.499999999999993 after a chain of merges); the mean is the fallback when the sum overflows.
    case 'avg': return Number.isFinite(state.sum / state.count) ? state.sum / state.count : state.mean
    case 'max': return state.max
    case 'min': return state.min
    case 'sum': return state.sum
    case 'first': return state.first
    case 'last': return state.last
    case 'dev': return state.count < 2 ? null : Math.sqrt(state.m2 / (state.count - 1))
  }
}

export interface ReferencePoint {
  at: number
  value: number
}

export interface ReferenceBucket {
  bucket: number
  value: number | null
  count: number
}

function directly (points: readonly ReferencePoint[], fn: RollupFunction): number | null {
  const values = points.map((p) => p.value)
  const n = values.length
  if (fn === 'count') return n
  if (n === 0) return null
  let sum = 0
  for (const v of values) sum += v
  switch (fn) {
    case 'avg': return sum / n
    case 'sum': return sum
    case 'max': return values.reduce((m, v) => (v > m ? v : m))
    case 'min': return values.reduce((m, v) => (v < m ? v : m))
    case 'first': return points.reduce((f, p) => (p.at < f.at ? p : f)).value
    case 'last': return points.reduce((l, p) => (p.at > l.at ? p : l)).value
    case 'dev': {
      if (n < 2) return null
      const mean = sum / n
      let squares = 0
      for (const v of values) squares += (v - mean) * (v - mean)
      return Math.sqrt(squares / (n - 1))
    }
  }
}

/**
 * The plain, obviously correct aggregation the conformance tests hold the engines to: group by
 * bucket, compute each function from the bucket's values, buckets ascending. Ties in time resolve
 * to the earlier point in `points`, as a left fold of mergeStates would. A raw rollup makes every
 * point its own bucket, in time order.
 */
export function referenceAggregate (points: readonly ReferencePoint[], rollup: Rollup, fn: RollupFunction): ReferenceBucket[] {
  if (rollup.raw) {
    return points
      .map((p, i) => ({ p, i }))
      .sort((x, y) => x.p.at - y.p.at || x.i - y.i)
      .map(({ p }) => ({ bucket: p.at, value: directly([p], fn), count: 1 }))
  }
  const buckets = new Map<number, ReferencePoint[]>()
  for (const point of points) {
    const bucket = bucketStart(new Date(point.at), rollup).getTime()
    const members = buckets.get(bucket)
    if (members === undefined) buckets.set(bucket, [point])
    else members.push(point)
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([bucket, members]) => ({ bucket, value: directly(members, fn), count: members.length }))
}
