import t from 'tap'
import fc from 'fast-check'
import {
  finalize, isRollupFunction, mergeStates, referenceAggregate, rollupFunctions, stateOf,
  type AggregateState, type ReferencePoint, type RollupFunction
} from '../../src/readings/aggregate-state.js'
import { bucketStart, parseRollup, type Rollup } from '../../src/readings/rollup.js'
import { seededRandom } from '@esp/test-helpers/random'

const T0 = Date.parse('2024-01-01T00:00:00Z')
const HOUR = 3_600_000

function shuffled<T> (items: readonly T[], rand: () => number): T[] {
  const copy = [...items]
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    const a = copy[i] as T
    copy[i] = copy[j] as T
    copy[j] = a
  }
  return copy
}

/** Merges the states as a random binary tree, as partial aggregates from partitions would be. */
function mergeTree (states: readonly AggregateState[], rand: () => number): AggregateState {
  if (states.length === 1) return states[0] as AggregateState
  const split = 1 + Math.floor(rand() * (states.length - 1))
  return mergeStates(mergeTree(states.slice(0, split), rand), mergeTree(states.slice(split), rand))
}

function byBucket (points: readonly ReferencePoint[], rollup: Rollup): Map<number, ReferencePoint[]> {
  const groups = new Map<number, ReferencePoint[]>()
  for (const p of points) {
    const key = rollup.raw ? p.at : bucketStart(new Date(p.at), rollup).getTime()
    groups.set(key, [...(groups.get(key) ?? []), p])
  }
  return groups
}

function close (actual: number | null, expected: number | null, tolerance: number): boolean {
  if (actual === null || expected === null) return actual === expected
  return Math.abs(actual - expected) <= tolerance
}

const rollupArb = fc.constantFrom('0s', '10m', '1h', '6h', '1d', '1w', '1M', '1y').map(parseRollup)
// Quarter steps keep every sum exact in any order, so sum can be compared exactly; the data stay
// well conditioned, so a relative 1e-9 is a fair bound for avg and dev.
const pointsArb = fc.uniqueArray(
  fc.record({ at: fc.integer({ min: T0, max: T0 + 40 * 24 * HOUR }), value: fc.integer({ min: -1000, max: 1000 }).map((k) => k / 4) }),
  { selector: (p) => p.at, maxLength: 200 })

t.test('property: every fold order and merge tree finalizes to the reference', async (t) => {
  fc.assert(fc.property(pointsArb, rollupArb, fc.integer(), (points, rollup, seed) => {
    const rand = seededRandom(seed)
    const groups = byBucket(points, rollup)
    for (const fn of rollupFunctions) {
      const reference = referenceAggregate(points, rollup, fn)
      if (reference.length !== groups.size) return false
      for (const { bucket, value, count } of reference) {
        const members = groups.get(bucket)
        if (members === undefined || members.length !== count) return false
        const states = shuffled(members, rand).map((p) => stateOf(p.at, p.value))
        const folded = states.slice(1).reduce(mergeStates, states[0] as AggregateState)
        const tree = mergeTree(shuffled(states, rand), rand)
        const scale = Math.max(...members.map((p) => Math.abs(p.value)))
        const tolerance = fn === 'avg' ? 1e-9 * scale : fn === 'dev' ? 1e-9 * Math.abs(value ?? 0) : 0
        for (const state of [folded, tree]) {
          if (!close(finalize(state, fn), value, tolerance)) {
            throw new Error(`${fn} of bucket ${bucket}: ${String(finalize(state, fn))} instead of ${String(value)}`)
          }
        }
      }
    }
    return true
  }), { numRuns: 1000 })
  t.pass()
})

t.test('property: readings around a large value keep their deviation', async (t) => {
  const pressure = fc.array(fc.integer({ min: -100, max: 100 }).map((k) => 101325 + k / 100), { minLength: 2, maxLength: 300 })
  fc.assert(fc.property(pressure, fc.integer(), (values, seed) => {
    const rand = seededRandom(seed)
    const points = values.map((value, i) => ({ at: T0 + i * 1000, value }))
    const [reference] = referenceAggregate(points, parseRollup('1d'), 'dev')
    const tree = mergeTree(shuffled(points, rand).map((p) => stateOf(p.at, p.value)), rand)
    const expected = reference?.value ?? null
    return close(finalize(tree, 'dev'), expected, 1e-6 * Math.max(expected ?? 0, 1e-3))
  }), { numRuns: 500 })
  t.pass()
})

t.test('101325 ± 0.01 gives a deviation of 0.01, where the sum of squares gives nonsense', async (t) => {
  const values = Array.from({ length: 1000 }, (_, i) => (i % 2 === 0 ? 101324.99 : 101325.01))
  const state = values.map((v, i) => stateOf(T0 + i, v)).reduce((a, b) => mergeStates(a, b))
  const dev = finalize(state, 'dev') ?? 0
  const exact = 0.01 * Math.sqrt(1000 / 999)
  t.ok(Math.abs(dev - exact) < 1e-8, `dev ${dev}`)
  t.ok(Math.abs((finalize(state, 'avg') ?? 0) - 101325) < 1e-9)
  const sum = values.reduce((a, v) => a + v, 0)
  const squares = values.reduce((a, v) => a + v * v, 0)
  const naive = Math.sqrt(Math.max(0, (squares - (sum * sum) / values.length) / (values.length - 1)))
  t.ok(Math.abs(naive - exact) > 1e-3, `the naive formula is off (${naive}), so this case tells the two apart`)
  const [reference] = referenceAggregate(values.map((value, i) => ({ at: T0 + i, value })), parseRollup('1h'), 'dev')
  t.ok(Math.abs((reference?.value ?? 0) - exact) < 1e-8, 'the reference is two-pass')
})

t.test('a single reading', async (t) => {
  const state = stateOf(T0, 21.5)
  t.same(state, { count: 1, mean: 21.5, m2: 0, sum: 21.5, min: 21.5, max: 21.5, firstAt: T0, first: 21.5, lastAt: T0, last: 21.5 })
  const expected: Record<RollupFunction, number | null> = { avg: 21.5, max: 21.5, min: 21.5, sum: 21.5, count: 1, dev: null, first: 21.5, last: 21.5 }
  for (const fn of rollupFunctions) t.equal(finalize(state, fn), expected[fn], fn)
  t.same(referenceAggregate([{ at: T0 + 5, value: 21.5 }], parseRollup('1h'), 'dev'), [{ bucket: T0, value: null, count: 1 }])
})

t.test('two readings: the sample deviation, as stddev_samp', async (t) => {
  const state = mergeStates(stateOf(T0 + 1, 1), stateOf(T0, 3))
  t.equal(finalize(state, 'dev'), Math.SQRT2)
  t.equal(finalize(state, 'avg'), 2)
  t.equal(finalize(state, 'first'), 3, 'the earlier reading, whichever side it came from')
  t.equal(finalize(state, 'last'), 1)
  t.equal(finalize(state, 'sum'), 4)
  t.equal(finalize(state, 'count'), 2)
})

t.test('empty states merge away and finalize to null', async (t) => {
  const empty: AggregateState = { count: 0, mean: 0, m2: 0, sum: 0, min: Infinity, max: -Infinity, firstAt: Infinity, first: 0, lastAt: -Infinity, last: 0 }
  const one = stateOf(T0, 5)
  t.same(mergeStates(empty, one), one)
  t.same(mergeStates(one, empty), one)
  for (const fn of rollupFunctions) t.equal(finalize(empty, fn), fn === 'count' ? 0 : null, fn)
  for (const fn of rollupFunctions) t.same(referenceAggregate([], parseRollup('1h'), fn), [], fn)
})

t.test('on equal times the left state keeps first and last', async (t) => {
  const merged = mergeStates(stateOf(T0, 1), stateOf(T0, 2))
  t.equal(merged.first, 1)
  t.equal(merged.last, 1)
  const points = [{ at: T0, value: 7 }, { at: T0, value: 8 }, { at: T0 - 1, value: 6 }, { at: T0 + 1, value: 9 }, { at: T0 + 1, value: 10 }]
  t.same(referenceAggregate(points, parseRollup('1d'), 'first'), [{ bucket: T0 - 24 * HOUR, value: 6, count: 1 }, { bucket: T0, value: 7, count: 4 }])
  t.same(referenceAggregate(points, parseRollup('1d'), 'last'), [{ bucket: T0 - 24 * HOUR, value: 6, count: 1 }, { bucket: T0, value: 9, count: 4 }])
})

t.test('the reference groups by bucket, ascending', async (t) => {
  const points = [
    { at: T0 + 2 * HOUR + 5, value: 4 }, { at: T0 + 10, value: 1 }, { at: T0 + 20, value: 3 }, { at: T0 + 2 * HOUR, value: 6 }
  ]
  const hour = parseRollup('1h')
  t.same(referenceAggregate(points, hour, 'avg'), [{ bucket: T0, value: 2, count: 2 }, { bucket: T0 + 2 * HOUR, value: 5, count: 2 }])
  t.same(referenceAggregate(points, hour, 'max').map((b) => b.value), [3, 6])
  t.same(referenceAggregate(points, hour, 'min').map((b) => b.value), [1, 4])
  t.same(referenceAggregate(points, hour, 'sum').map((b) => b.value), [4, 10])
  t.same(referenceAggregate(points, hour, 'count').map((b) => b.value), [2, 2])
  t.same(referenceAggregate(points, hour, 'first').map((b) => b.value), [1, 6])
  t.same(referenceAggregate(points, hour, 'last').map((b) => b.value), [3, 4])
  t.same(referenceAggregate(points, hour, 'dev').map((b) => b.value), [Math.SQRT2, Math.SQRT2])
  t.same(referenceAggregate(points, parseRollup('1M'), 'count'), [{ bucket: T0, value: 4, count: 4 }])
})

t.test('a raw rollup makes every reading its own bucket, duplicates included', async (t) => {
  const points = [{ at: T0 + 5, value: 2 }, { at: T0, value: 1 }, { at: T0 + 5, value: 3 }]
  t.same(referenceAggregate(points, parseRollup('0s'), 'avg'),
    [{ bucket: T0, value: 1, count: 1 }, { bucket: T0 + 5, value: 2, count: 1 }, { bucket: T0 + 5, value: 3, count: 1 }])
  t.same(referenceAggregate(points, parseRollup('0M'), 'dev').map((b) => b.value), [null, null, null])
})

t.test('the function names', async (t) => {
  t.same(rollupFunctions, ['avg', 'max', 'min', 'sum', 'count', 'dev', 'first', 'last'])
  t.ok(isRollupFunction('dev'))
  t.notOk(isRollupFunction('stddev'))
  t.notOk(isRollupFunction('AVG'))
  t.notOk(isRollupFunction('constructor'))
})
