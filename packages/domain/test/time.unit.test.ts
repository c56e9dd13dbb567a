import t from 'tap'
import fc from 'fast-check'
import { formatTimestamp } from '../src/time.js'

/** The contract's form the obvious way: toISOString cut to the second. */
function expected (ms: number): string {
  const iso = new Date(ms).toISOString()
  if (iso.length === 24) return `${iso.slice(0, 19)}Z`
  return new Date(Math.floor(ms / 1000) * 1000).toISOString()
}

t.test('formatTimestamp agrees with toISOString cut to the second, whatever day came before', async (t) => {
  const instant = fc.oneof(
    fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2099, 0, 1) }),
    fc.integer({ min: -8.64e15, max: 8.64e15 }),
    fc.integer({ min: -5_000, max: 5_000 }).map((d) => Date.UTC(2000, 0, 1) + d),
    fc.integer({ min: -5_000, max: 5_000 })
  )
  fc.assert(fc.property(fc.array(instant, { minLength: 1, maxLength: 4 }), (times) =>
    times.every((ms) => formatTimestamp(new Date(ms)) === expected(ms))), { numRuns: 20_000 })
  t.equal(formatTimestamp(new Date(Date.UTC(2026, 10, 1, 7, 5, 9, 999))), '2026-11-01T07:05:09Z')
  t.equal(formatTimestamp(new Date(-1)), '1969-12-31T23:59:59Z')
  t.equal(formatTimestamp(null), null)
  t.throws(() => formatTimestamp(new Date(Number.NaN)), RangeError)
})
