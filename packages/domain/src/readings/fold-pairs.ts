import { addValue, BucketStates } from '@esp/db'
import { stateOf } from './aggregate-state.js'
import { bucketStartMs, countBuckets, nextBucket, type Rollup } from './rollup.js'

/**
 * The bucket of each of a run of ascending instants. In a zone a bucket's bounds are worked out
 * once and the instants inside it compared with them, rather than each converted to wall time.
 */
export function bucketKeyer (rollup: Rollup): (t: number) => number {
  if (rollup.zone === undefined) return (t) => bucketStartMs(t, rollup)
  let start = Infinity
  let end = -Infinity
  return (t) => {
    if (t >= start && t < end) return start
    start = bucketStartMs(t, rollup)
    end = nextBucket(new Date(start), rollup).getTime()
    return start
  }
}

/**
 * States from raw (time, value) pairs in time order, as the SQL aggregates would give them: a
 * null value (NaN) is counted nowhere, but a bucket's first and last pairs give its first and
 * last, whatever their values.
 */
export function foldPairs (pairs: Float64Array, rollup: Rollup): BucketStates {
  // Sized once: at most a bucket a pair, and no more than the pairs' time spans (a run of a long
  // answer folds tens of thousands, and growing by doubling made as much again of garbage).
  const count = pairs.length / 2
  const spanned = count === 0 ? 0 : countBuckets(new Date(pairs[0] as number), new Date(pairs[pairs.length - 2] as number), rollup)
  const states = new BucketStates(Math.min(count, spanned))
  const state = stateOf(0, 0)
  // A fixed bucket on UTC's clock ends its length later: no Date a bucket.
  const fixed = rollup.zone === undefined ? rollup.fixedMs : null
  let i = 0
  while (i < pairs.length) {
    const bucket = bucketStartMs(pairs[i] as number, rollup)
    // Pairs come in time order: a bucket's end is worked out once, not a bucket start per pair.
    const end = fixed !== null ? bucket + fixed : nextBucket(new Date(bucket), rollup).getTime()
    state.count = state.mean = state.m2 = state.sum = 0
    state.min = Infinity
    state.max = -Infinity
    state.firstAt = pairs[i] as number
    state.first = pairs[i + 1] as number
    for (; i < pairs.length && (pairs[i] as number) < end; i += 2) {
      const at = pairs[i] as number
      const value = pairs[i + 1] as number
      if (!Number.isNaN(value)) addValue(state, at, value)
      state.lastAt = at
      state.last = value
    }
    states.write(states.add(bucket), state)
  }
  return states
}
