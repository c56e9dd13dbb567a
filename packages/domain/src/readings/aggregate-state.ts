import { bucketStart, type Rollup } from './rollup.js'

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

export type RollupFunction = 'avg' | 'max' | 'min' | 'sum' | 'count' | 'dev' | 'first' | 'last'

export const rollupFunctions: readonly RollupFunction[] = ['avg', 'max', 'min', 'sum', 'count', 'dev', 'first', 'last']

export function isRollupFunction (name: string): name is RollupFunction {
  return (rollupFunctions as readonly string[]).includes(name)
}

export function stateOf (at: number, value: number): AggregateState {
  return { count: 1, mean: value, m2: 0, sum: value, min: value, max: value, firstAt: at, first: value, lastAt: at, last: value }
}

/** Chan et al.'s parallel combination. On equal times `a` keeps its first and last. */
export function mergeStates (a: AggregateState, b: AggregateState): AggregateState {
  if (b.count === 0) return a
  if (a.count === 0) return b
  const count = a.count + b.count
  const delta = b.mean - a.mean
  const takeFirstOfB = b.firstAt < a.firstAt
  const takeLastOfB = b.lastAt > a.lastAt
  return {
    count,
    mean: a.mean + delta * (b.count / count),
    m2: a.m2 + b.m2 + delta * delta * (a.count * b.count / count),
    sum: a.sum + b.sum,
    min: Math.min(a.min, b.min),
    max: Math.max(a.max, b.max),
    firstAt: takeFirstOfB ? b.firstAt : a.firstAt,
    first: takeFirstOfB ? b.first : a.first,
    lastAt: takeLastOfB ? b.lastAt : a.lastAt,
    last: takeLastOfB ? b.last : a.last
  }
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
