import t from 'tap'
import fc from 'fast-check'
import { ApiError } from '../../src/errors.js'
import {
  bucketStart, bucketStartsBetween, countBuckets, nextBucket, parseRollup, rollupSql,
  type Rollup, type RollupUnit
} from '../../src/readings/rollup.js'

const at = (iso: string) => new Date(iso)
const iso = (date: Date | undefined) => date?.toISOString()

const units: RollupUnit[] = ['y', 'M', 'w', 'd', 'h', 'm', 's', 'ms']
const maxValue: Record<RollupUnit, number> = { y: 30, M: 40, w: 60, d: 400, h: 1000, m: 5000, s: 100_000, ms: 2_000_000 }

/** Any valid rollup, raw ones included now and then. */
const rollupArb: fc.Arbitrary<Rollup> = fc.constantFrom(...units).chain((unit) =>
  fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 9, arbitrary: fc.integer({ min: 1, max: maxValue[unit] }) })
    .map((value) => parseRollup(`${value}${unit}`)))
const dateArb = fc.date({ min: at('1990-01-01T00:00:00Z'), max: at('2100-12-31T23:59:59.999Z'), noInvalidDate: true })

t.test('the documented and client-sent forms parse', async (t) => {
  const hour = 3_600_000
  t.same(parseRollup('1h'), { text: '1h', value: 1, unit: 'h', raw: false, fixedMs: hour })
  t.same(parseRollup('10m'), { text: '10m', value: 10, unit: 'm', raw: false, fixedMs: 600_000 })
  t.same(parseRollup('100ms'), { text: '100ms', value: 100, unit: 'ms', raw: false, fixedMs: 100 })
  t.same(parseRollup('630s'), { text: '630s', value: 630, unit: 's', raw: false, fixedMs: 630_000 })
  t.same(parseRollup('1d'), { text: '1d', value: 1, unit: 'd', raw: false, fixedMs: 24 * hour })
  t.same(parseRollup('2w'), { text: '2w', value: 2, unit: 'w', raw: false, fixedMs: 14 * 24 * hour })
  t.same(parseRollup('1M'), { text: '1M', value: 1, unit: 'M', raw: false, fixedMs: null })
  t.same(parseRollup('1y'), { text: '1y', value: 1, unit: 'y', raw: false, fixedMs: null })
  t.same(parseRollup('0s'), { text: '0s', value: 0, unit: 's', raw: true, fixedMs: 0 }, 'the web sends 0s for short ranges')
  t.same(parseRollup('0M'), { text: '0M', value: 0, unit: 'M', raw: true, fixedMs: null })
  t.same(parseRollup(' 4h\t'), { text: '4h', value: 4, unit: 'h', raw: false, fixedMs: 4 * hour }, 'surrounding whitespace')
  t.equal(parseRollup('007m').value, 7, 'leading zeros are digits like any other')
  t.equal(parseRollup('999999999ms').fixedMs, 999_999_999, 'nine digits')
  t.equal(parseRollup('99999999m').fixedMs, 99_999_999 * 60_000)
})

t.test('months and minutes are told apart by case', async (t) => {
  t.equal(parseRollup('5M').unit, 'M')
  t.equal(parseRollup('5m').unit, 'm')
  t.equal(parseRollup('5ms').unit, 'ms')
})

t.test('anything else is a 400 naming the rollup field', async (t) => {
  const rejected = ['None', 'avg', '5x', '1.5h', '-1h', '+1h', 'h', 'ms', '1', '1H', '1D', '1Y', '1 h', '1hh', '1hm', '1mss', '1sm',
    '1e3s', '0x10s', '1_000s', '1,5h', '1000000000s', 'null', '1h;drop', '１h']
  for (const input of rejected) {
    const error = t.throws(() => parseRollup(input), input) as ApiError
    t.type(error, ApiError)
    t.match(error, {
      statusCode: 400,
      code: 'ESP_BAD_REQUEST',
      id: 'bad_request',
      message: 'rollup must be an integer followed by one of y, M, w, d, h, m, s, ms (e.g. 1h, 10m, 1d)',
      errors: { rollup: ['is invalid'] }
    }, input)
  }
})

t.test('a missing or blank rollup is a missing parameter', async (t) => {
  for (const input of [undefined, '', '   ']) {
    const error = t.throws(() => parseRollup(input)) as ApiError
    t.match(error, { statusCode: 400, code: 'ESP_PARAMETER_MISSING', id: 'parameter_missing', errors: { rollup: ["can't be blank"] } })
  }
})

t.test('buckets longer than 1000 years are refused instead of overflowing', async (t) => {
  for (const input of ['999999999m', '999999999h', '999999999d', '999999999w', '999999999M', '999999999y', '1001y', '12001M', '52178w', '365243d']) {
    const error = t.throws(() => parseRollup(input), input) as ApiError
    t.match(error, { statusCode: 400, errors: { rollup: ['is too long'] } }, input)
  }
  for (const input of ['1000y', '12000M', '52177w', '365242d', '8765820h', '999999999s']) t.equal(parseRollup(input).text, input)
})

t.test('fixed units align to the Unix epoch', async (t) => {
  const time = at('2024-01-30T10:37:12.345Z')
  t.equal(iso(bucketStart(time, parseRollup('1h'))), '2024-01-30T10:00:00.000Z')
  t.equal(iso(bucketStart(time, parseRollup('10m'))), '2024-01-30T10:30:00.000Z')
  t.equal(iso(bucketStart(time, parseRollup('1m'))), '2024-01-30T10:37:00.000Z')
  t.equal(iso(bucketStart(time, parseRollup('1s'))), '2024-01-30T10:37:12.000Z')
  t.equal(iso(bucketStart(time, parseRollup('100ms'))), '2024-01-30T10:37:12.300Z')
  t.equal(iso(bucketStart(time, parseRollup('1d'))), '2024-01-30T00:00:00.000Z')
  t.equal(iso(bucketStart(time, parseRollup('7h'))), new Date(time.getTime() - (time.getTime() % (7 * 3_600_000))).toISOString())
  t.equal(iso(bucketStart(time, parseRollup('630s'))), new Date(time.getTime() - (time.getTime() % 630_000)).toISOString())
  // Day 19752 since the epoch is even.
  t.equal(iso(bucketStart(time, parseRollup('2d'))), '2024-01-30T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-01-31T23:59:59.999Z'), parseRollup('2d'))), '2024-01-30T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1970-01-02T12:00:00Z'), parseRollup('2d'))), '1970-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-01-30T10:00:00Z'), parseRollup('1h'))), '2024-01-30T10:00:00.000Z', 'a boundary is its own start')
})

t.test('times before the origin floor rather than truncate (date_bin)', async (t) => {
  t.equal(iso(bucketStart(at('1969-12-31T23:30:00Z'), parseRollup('1h'))), '1969-12-31T23:00:00.000Z')
  t.equal(iso(bucketStart(at('1969-12-31T23:59:59.999Z'), parseRollup('1d'))), '1969-12-31T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1970-01-01T00:00:00Z'), parseRollup('1w'))), '1969-12-29T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1970-01-04T23:59:59Z'), parseRollup('2w'))), '1969-12-22T00:00:00.000Z')
})

t.test('weeks start on Mondays at midnight UTC', async (t) => {
  t.equal(iso(bucketStart(at('2024-01-31T15:00:00Z'), parseRollup('1w'))), '2024-01-29T00:00:00.000Z', 'Wednesday → Monday')
  t.equal(iso(bucketStart(at('2024-02-04T23:59:59Z'), parseRollup('1w'))), '2024-01-29T00:00:00.000Z', 'Sunday → Monday before')
  t.equal(iso(bucketStart(at('2024-01-29T00:00:00Z'), parseRollup('1w'))), '2024-01-29T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1970-01-19T00:00:00Z'), parseRollup('2w'))), '1970-01-19T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1970-01-18T23:59:59Z'), parseRollup('2w'))), '1970-01-05T00:00:00.000Z')
})

t.test('months and years are calendar buckets counted from 1970', async (t) => {
  t.equal(iso(bucketStart(at('2024-02-29T23:59:59.999Z'), parseRollup('1M'))), '2024-02-01T00:00:00.000Z')
  // 2024-05 is month 652 since 1970-01; 651 is the multiple of 3 below it.
  t.equal(iso(bucketStart(at('2024-05-15T00:00:00Z'), parseRollup('3M'))), '2024-04-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-03-31T00:00:00Z'), parseRollup('3M'))), '2024-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-12-31T23:59:59Z'), parseRollup('12M'))), '2024-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-06-15T12:00:00Z'), parseRollup('1y'))), '2024-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-06-15T12:00:00Z'), parseRollup('10y'))), '2020-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-06-15T12:00:00Z'), parseRollup('7y'))), '2019-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1969-06-15T12:00:00Z'), parseRollup('1M'))), '1969-06-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1969-06-15T12:00:00Z'), parseRollup('5y'))), '1965-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('2024-06-15T12:00:00Z'), parseRollup('1000y'))), '1970-01-01T00:00:00.000Z')
  t.equal(iso(bucketStart(at('1969-06-15T12:00:00Z'), parseRollup('1000y'))), '0970-01-01T00:00:00.000Z')
})

t.test('a raw rollup leaves every time alone', async (t) => {
  const time = at('2024-01-30T10:37:12.345Z')
  for (const text of ['0s', '0ms', '0M', '0y', '0w']) {
    const rollup = parseRollup(text)
    t.equal(iso(bucketStart(time, rollup)), time.toISOString(), text)
    t.equal(nextBucket(time, rollup).getTime(), time.getTime() + 1, text)
  }
})

t.test('nextBucket adds one bucket, by the calendar for months and years', async (t) => {
  t.equal(iso(nextBucket(at('2024-01-01T00:00:00Z'), parseRollup('1M'))), '2024-02-01T00:00:00.000Z')
  t.equal(iso(nextBucket(at('2023-11-01T00:00:00Z'), parseRollup('3M'))), '2024-02-01T00:00:00.000Z')
  t.equal(iso(nextBucket(at('2024-01-01T00:00:00Z'), parseRollup('1y'))), '2025-01-01T00:00:00.000Z')
  t.equal(iso(nextBucket(at('2024-01-29T00:00:00Z'), parseRollup('1w'))), '2024-02-05T00:00:00.000Z')
  t.equal(iso(nextBucket(at('2024-01-30T23:00:00Z'), parseRollup('1h'))), '2024-01-31T00:00:00.000Z')
  t.equal(iso(nextBucket(at('2024-01-31T00:00:00Z'), parseRollup('1M'))), '2024-02-29T00:00:00.000Z', 'an unaligned start is clamped to the month end')
})

t.test('the buckets of a window', async (t) => {
  const hour = parseRollup('1h')
  t.same(bucketStartsBetween(at('2024-01-30T10:30:00Z'), at('2024-01-30T12:00:00Z'), hour, 10)?.map(iso),
    ['2024-01-30T10:00:00.000Z', '2024-01-30T11:00:00.000Z', '2024-01-30T12:00:00.000Z'], 'both ends are inclusive')
  t.same(bucketStartsBetween(at('2024-01-30T10:30:00Z'), at('2024-01-30T11:59:59.999Z'), hour, 10)?.map(iso),
    ['2024-01-30T10:00:00.000Z', '2024-01-30T11:00:00.000Z'])
  t.equal(countBuckets(at('2024-01-30T10:30:00Z'), at('2024-01-30T12:00:00Z'), hour), 3)
  t.same(bucketStartsBetween(at('2024-01-30T10:30:00Z'), at('2024-01-30T10:30:00Z'), hour, 1)?.map(iso), ['2024-01-30T10:00:00.000Z'])
  t.same(bucketStartsBetween(at('2024-01-30T12:00:00Z'), at('2024-01-30T10:00:00Z'), hour, 10), [], 'to before from')
  t.equal(countBuckets(at('2024-01-30T12:00:00Z'), at('2024-01-30T10:00:00Z'), hour), 0)
  t.equal(bucketStartsBetween(at('2024-01-30T10:30:00Z'), at('2024-01-30T12:00:00Z'), hour, 2), null, 'over the limit')
  t.equal(bucketStartsBetween(at('2024-01-30T10:30:00Z'), at('2024-01-30T12:00:00Z'), hour, 0), null)
  t.equal(bucketStartsBetween(at('2024-01-30T10:30:00Z'), at('2024-01-30T12:00:00Z'), hour, Number.NaN), null, 'a NaN limit refuses')
  t.same(bucketStartsBetween(at('2024-01-15T00:00:00Z'), at('2024-03-01T00:00:00Z'), parseRollup('1M'), 3)?.map(iso),
    ['2024-01-01T00:00:00.000Z', '2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z'])
  t.same(bucketStartsBetween(at('2019-05-01T00:00:00Z'), at('2024-01-01T00:00:00Z'), parseRollup('2y'), 4)?.map(iso),
    ['2018-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z', '2022-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z'])
  t.equal(bucketStartsBetween(at('2019-05-01T00:00:00Z'), at('2024-01-01T00:00:00Z'), parseRollup('2y'), 3), null)
  t.equal(countBuckets(at('2019-05-01T00:00:00Z'), at('2024-01-01T00:00:00Z'), parseRollup('2y')), 4)
  t.equal(countBuckets(at('2001-01-01T00:00:00Z'), at('2026-01-01T00:00:00Z'), parseRollup('1m')), 13_148_641,
    'the connector\'s default window at 1m, counted without allocating')
  t.equal(countBuckets(at('2024-01-30T10:00:00Z'), at('2024-01-30T10:00:01Z'), parseRollup('0s')), 1001, 'raw: one per millisecond')
  t.same(bucketStartsBetween(at('2022-09-10T00:00:00Z'), at('2022-09-10T00:02:30Z'), parseRollup('1m'), 100)?.[0]?.toISOString(),
    '2022-09-10T00:00:00.000Z', 'the first minute bucket is `from` itself (clients.md §4.23)')
})

t.test('the SQL description of each rollup', async (t) => {
  t.same(rollupSql(parseRollup('1h')), { kind: 'bin', interval: '3600000 milliseconds', origin: '1970-01-01T00:00:00.000Z' })
  t.same(rollupSql(parseRollup('100ms')), { kind: 'bin', interval: '100 milliseconds', origin: '1970-01-01T00:00:00.000Z' })
  t.same(rollupSql(parseRollup('1d')), { kind: 'bin', interval: '1 days', origin: '1970-01-01T00:00:00.000Z' })
  t.same(rollupSql(parseRollup('25h')), { kind: 'bin', interval: '1 days 3600000 milliseconds', origin: '1970-01-01T00:00:00.000Z' })
  t.same(rollupSql(parseRollup('2w')), { kind: 'bin', interval: '14 days', origin: '1970-01-05T00:00:00.000Z' })
  t.same(rollupSql(parseRollup('3M')), { kind: 'trunc', field: 'month', value: 3 })
  t.same(rollupSql(parseRollup('1y')), { kind: 'trunc', field: 'year', value: 1 })
  t.same(rollupSql(parseRollup('0s')), { kind: 'raw' })
  t.same(rollupSql(parseRollup('0y')), { kind: 'raw' })
})

t.test('invalid dates are refused rather than looped over', async (t) => {
  t.throws(() => bucketStart(new Date(Number.NaN), parseRollup('1h')), RangeError)
  t.throws(() => countBuckets(new Date(Number.NaN), new Date(), parseRollup('1h')), RangeError)
})

t.test('property: a time lies in its bucket', async (t) => {
  fc.assert(fc.property(dateArb, rollupArb, (time, rollup) => {
    const start = bucketStart(time, rollup)
    const next = nextBucket(start, rollup)
    return start.getTime() <= time.getTime() && time.getTime() < next.getTime()
  }), { numRuns: 5000 })
  t.pass()
})

t.test('property: bucketStart is idempotent and the next bucket is aligned too', async (t) => {
  fc.assert(fc.property(dateArb, rollupArb, (time, rollup) => {
    const start = bucketStart(time, rollup)
    const next = nextBucket(start, rollup)
    return bucketStart(start, rollup).getTime() === start.getTime() && bucketStart(next, rollup).getTime() === next.getTime()
  }), { numRuns: 5000 })
  t.pass()
})

t.test('property: week, month and year buckets start where the calendar says', async (t) => {
  const calendarArb = fc.constantFrom<RollupUnit>('w', 'M', 'y')
    .chain((unit) => fc.integer({ min: 1, max: maxValue[unit] }).map((value) => parseRollup(`${value}${unit}`)))
  fc.assert(fc.property(dateArb, calendarArb, (time, rollup) => {
    const start = bucketStart(time, rollup)
    const midnight = start.getUTCHours() === 0 && start.getUTCMinutes() === 0 && start.getUTCSeconds() === 0 && start.getUTCMilliseconds() === 0
    if (!midnight) return false
    if (rollup.unit === 'w') return start.getUTCDay() === 1
    if (rollup.unit === 'M') return start.getUTCDate() === 1 && ((start.getUTCFullYear() - 1970) * 12 + start.getUTCMonth()) % rollup.value === 0
    return start.getUTCDate() === 1 && start.getUTCMonth() === 0 && (start.getUTCFullYear() - 1970) % rollup.value === 0
  }), { numRuns: 3000 })
  t.pass()
})

t.test('property: the listed buckets are exactly those meeting the window', async (t) => {
  const nonRaw = rollupArb.filter((r) => !r.raw)
  fc.assert(fc.property(dateArb, fc.integer({ min: -1000, max: 400 * 86_400_000 }), nonRaw, (from, span, rollup) => {
    const to = new Date(from.getTime() + span)
    const count = countBuckets(from, to, rollup)
    const starts = bucketStartsBetween(from, to, rollup, 2000)
    if (count > 2000) return starts === null
    if (starts === null || starts.length !== count) return false
    if (count === 0) return to < from
    const first = starts[0]
    const last = starts[starts.length - 1]
    if (first === undefined || last === undefined) return false
    const consecutive = starts.every((s, i) => i === 0 || nextBucket(starts[i - 1] ?? s, rollup).getTime() === s.getTime())
    return consecutive &&
      first.getTime() <= from.getTime() && nextBucket(first, rollup).getTime() > from.getTime() &&
      last.getTime() <= to.getTime() && nextBucket(last, rollup).getTime() > to.getTime()
  }), { numRuns: 2000 })
  t.pass()
})
