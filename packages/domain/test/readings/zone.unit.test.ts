import fc from 'fast-check'
import { DateTime } from 'luxon'
import t from 'tap'
import { dayOffsetTier, type Tier, TIERS } from '@esp/db'
import { ApiError } from '../../src/errors.js'
import { planSegments, planZoneSegments } from '../../src/readings/planner.js'
import { bucketStart, bucketStartsBetween, countBuckets, inZone, nextBucket, parseRollup } from '../../src/readings/rollup.js'
import { parseTimeZone } from '../../src/readings/zone.js'

const iso = (d: Date): string => d.toISOString()
const at = (text: string): Date => new Date(text)
const zoned = (rollup: string, zone: string) => inZone(parseRollup(rollup), parseTimeZone(zone))

t.test('timezone: an IANA name, UTC for nothing or a zone that is always UTC, a 400 naming an unknown one', async (t) => {
  for (const none of [undefined, '', '  ', 'UTC', 'Etc/UTC', 'GMT', 'utc']) t.equal(parseTimeZone(none), null, `${String(none)} is UTC`)
  t.equal(parseTimeZone('Europe/Madrid')?.name, 'Europe/Madrid')
  t.equal(parseTimeZone(' America/New_York ')?.name, 'America/New_York', 'surrounding whitespace')
  for (const bad of ['Mars/Olympus_Mons', 'Europe/Madridd', '+02:00', 'CEST', '../../etc/passwd', 'x'.repeat(500)]) {
    const error = t.throws(() => parseTimeZone(bad)) as ApiError
    t.equal(error.statusCode, 400, bad.slice(0, 20))
    t.match(error.message, `timezone ${bad.slice(0, 64)} is not a known IANA time zone`, 'the message names it')
    t.same(error.errors, { timezone: ['is not a known time zone'] })
  }
  t.equal(inZone(parseRollup('10m'), parseTimeZone('Asia/Kolkata')).zone, undefined, 'minutes are the same in every zone')
  t.equal(inZone(parseRollup('0d'), parseTimeZone('Asia/Kolkata')).zone, undefined, 'raw readings have no buckets')
})

t.test('days start at local midnight and last 23 or 25 hours when the clocks change', async (t) => {
  const day = zoned('1d', 'Europe/Madrid')
  t.equal(iso(bucketStart(at('2026-01-15T12:00:00Z'), day)), '2026-01-14T23:00:00.000Z', 'winter: UTC+1')
  t.equal(iso(bucketStart(at('2026-07-15T12:00:00Z'), day)), '2026-07-14T22:00:00.000Z', 'summer: UTC+2')
  t.equal(iso(bucketStart(at('2026-01-14T23:00:00Z'), day)), '2026-01-14T23:00:00.000Z', 'local midnight is its own start')
  t.equal(iso(bucketStart(at('2026-01-14T22:59:59.999Z'), day)), '2026-01-13T23:00:00.000Z')
  const spring = bucketStart(at('2026-03-29T12:00:00Z'), day)
  t.equal(iso(spring), '2026-03-28T23:00:00.000Z')
  t.equal(nextBucket(spring, day).getTime() - spring.getTime(), 23 * 3_600_000, 'the day the clocks go forward has 23 hours')
  const autumn = bucketStart(at('2026-10-25T12:00:00Z'), day)
  t.equal(iso(autumn), '2026-10-24T22:00:00.000Z')
  t.equal(nextBucket(autumn, day).getTime() - autumn.getTime(), 25 * 3_600_000, 'the day they go back has 25')
  t.same(bucketStartsBetween(at('2026-03-28T12:00:00Z'), at('2026-03-30T12:00:00Z'), day, 10)?.map(iso),
    ['2026-03-27T23:00:00.000Z', '2026-03-28T23:00:00.000Z', '2026-03-29T22:00:00.000Z'])
  t.equal(countBuckets(at('2026-03-28T12:00:00Z'), at('2026-03-30T12:00:00Z'), day), 3)

  t.equal(iso(bucketStart(at('2026-01-15T12:00:00Z'), zoned('1d', 'Asia/Kolkata'))), '2026-01-14T18:30:00.000Z', 'UTC+5:30')
  t.equal(iso(bucketStart(at('2026-01-15T12:00:00Z'), zoned('1d', 'Asia/Kathmandu'))), '2026-01-14T18:15:00.000Z', 'UTC+5:45')
  t.equal(iso(bucketStart(at('2026-01-15T12:00:00Z'), zoned('1d', 'America/New_York'))), '2026-01-15T05:00:00.000Z', 'UTC-5')
  // São Paulo moved its clocks at midnight: 2018-11-04 began at 01:00.
  const skipped = bucketStart(at('2018-11-04T12:00:00Z'), zoned('1d', 'America/Sao_Paulo'))
  t.equal(iso(skipped), '2018-11-04T03:00:00.000Z', 'a day whose midnight is skipped starts when it begins')
  t.equal(iso(nextBucket(skipped, zoned('1d', 'America/Sao_Paulo'))), '2018-11-05T02:00:00.000Z')
})

t.test('weeks start on the local Monday, months and years on their local first day', async (t) => {
  t.equal(iso(bucketStart(at('2026-03-31T12:00:00Z'), zoned('1w', 'Europe/Madrid'))), '2026-03-29T22:00:00.000Z', 'Tuesday, after the change → Monday 00:00 CEST')
  t.equal(iso(bucketStart(at('2026-03-29T12:00:00Z'), zoned('1w', 'Europe/Madrid'))), '2026-03-22T23:00:00.000Z', 'Sunday → the Monday before, CET')
  t.equal(iso(bucketStart(at('2026-04-15T12:00:00Z'), zoned('1M', 'Europe/Madrid'))), '2026-03-31T22:00:00.000Z')
  t.equal(iso(bucketStart(at('2026-01-01T00:30:00Z'), zoned('1y', 'Europe/Madrid'))), '2025-12-31T23:00:00.000Z', 'already the new year in Madrid')
  t.equal(iso(bucketStart(at('2025-12-31T22:30:00Z'), zoned('1y', 'Europe/Madrid'))), '2024-12-31T23:00:00.000Z', 'still the old one')
  t.equal(iso(bucketStart(at('2026-07-01T03:00:00Z'), zoned('1M', 'America/Los_Angeles'))), '2026-06-01T07:00:00.000Z', 'still June in California')
})

t.test('hours follow the wall clock: half-hour zones, and the hour the clocks repeat is one bucket', async (t) => {
  t.equal(iso(bucketStart(at('2026-01-15T12:10:00Z'), zoned('1h', 'Asia/Kolkata'))), '2026-01-15T11:30:00.000Z')
  t.equal(iso(bucketStart(at('2026-01-15T12:10:00Z'), zoned('6h', 'Europe/Madrid'))), '2026-01-15T11:00:00.000Z', '12:00 local')
  // 2026-10-25 in Madrid: 02:00-03:00 happens twice (00:00-02:00 UTC).
  const hour = zoned('1h', 'Europe/Madrid')
  t.equal(iso(bucketStart(at('2026-10-25T01:30:00Z'), hour)), '2026-10-25T00:00:00.000Z', 'the second 02:00 joins the first')
  t.equal(iso(nextBucket(at('2026-10-25T00:00:00Z'), hour)), '2026-10-25T02:00:00.000Z')
})

// Zones with daylight saving in either hemisphere, half and quarter hours, a half-hour DST, and a
// midnight change; the years hold changes of their rules too.
const ZONES = ['Europe/Madrid', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'America/Sao_Paulo', 'Pacific/Chatham', 'America/St_Johns', 'Africa/Casablanca', 'Asia/Tehran']
const UNITS = { d: 'day', w: 'week', M: 'month', y: 'year' } as const

t.test('property: buckets are the wall clock\'s days, weeks, months and years, as luxon reckons them', async (t) => {
  await fc.assert(fc.property(
    fc.constantFrom(...ZONES), fc.constantFrom(...(Object.keys(UNITS) as (keyof typeof UNITS)[])),
    fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2040, 0, 1) }),
    (zone, unit, ms) => {
      const rollup = zoned(`1${unit}`, zone)
      const start = bucketStart(new Date(ms), rollup)
      const local = DateTime.fromMillis(ms, { zone }).startOf(UNITS[unit], { useLocaleWeeks: false })
      const expected = local.toMillis()
      const next = nextBucket(start, rollup).getTime()
      const expectedNext = local.plus({ [`${UNITS[unit]}s`]: 1 }).startOf(UNITS[unit]).toMillis()
      if (start.getTime() !== expected || next !== expectedNext) {
        throw new Error(`${zone} ${unit} ${new Date(ms).toISOString()}: [${start.toISOString()}, ${new Date(next).toISOString()}) expected [${new Date(expected).toISOString()}, ${new Date(expectedNext).toISOString()})`)
      }
      return start.getTime() <= ms && ms < next
    }), { numRuns: 3000, seed: 20261126 })
  t.pass('3000 instants')
})

t.test('which stored tiers a zone can use: its offsets and their changes on whole hours, or not', async (t) => {
  const year = [Date.UTC(2025, 0, 1), Date.UTC(2026, 0, 1)] as const
  t.equal(parseTimeZone('Europe/Madrid')?.alignmentBetween(...year), 3_600_000)
  t.equal(parseTimeZone('America/New_York')?.alignmentBetween(...year), 3_600_000)
  t.equal(parseTimeZone('Asia/Kolkata')?.alignmentBetween(...year), 900_000)
  t.equal(parseTimeZone('Asia/Kathmandu')?.alignmentBetween(...year), 900_000)
  t.equal(parseTimeZone('Australia/Lord_Howe')?.alignmentBetween(...year), 900_000, 'its DST is half an hour')
  t.equal(parseTimeZone('Africa/Abidjan')?.alignmentBetween(...year), 86_400_000, 'UTC all year: even the daily tier')
})

t.test('the planner: local days from the hourly tier where offsets are whole hours, from raw rows where not', async (t) => {
  const from = at('2025-11-26T00:00:00Z')
  const until = at('2026-11-26T00:00:00Z')
  const sources = (rollup: string, zone: string): string[] => {
    const r = zoned(rollup, zone)
    return [...new Set(planSegments(r, from, until, TIERS, r.zone?.alignmentBetween(from.getTime(), until.getTime())).map((s) => typeof s.source === 'string' ? s.source : s.source.name))]
  }
  t.same(sources('1d', 'Europe/Madrid'), ['hourly'], 'a year of Madrid days: hours, the daily tier\'s UTC days straddle them')
  t.same(sources('1M', 'America/New_York'), ['hourly'])
  t.same(sources('1d', 'Asia/Kolkata'), ['raw'], 'half-hour offsets: raw rows')
  t.same(sources('1d', 'Africa/Abidjan'), ['daily'], 'a zone at UTC all year: its days are the daily tier\'s')
  t.same(planSegments(parseRollup('1d'), from, until, TIERS).map((s) => typeof s.source === 'string' ? s.source : s.source.name), ['daily'], 'UTC days: the daily tier, as before')
})

t.test("the planner: a zone's whole days from its offsets' daily tiers, the days the clocks change from hours", async (t) => {
  const from = at('2025-11-26T05:30:00Z')
  const until = at('2026-11-26T00:00:00Z')
  const madrid = new Map([3_600_000, 7_200_000].map((offset) => [offset, dayOffsetTier(offset)]))
  const plan = (rollup: string, zone: string, tiers: ReadonlyMap<number, Tier>): string[] => {
    const r = zoned(rollup, zone)
    return planZoneSegments(r, from, until, TIERS, r.zone?.alignmentBetween(from.getTime(), until.getTime()), tiers)
      .map((s) => `${typeof s.source === 'string' ? s.source : s.source.offsetMinutes === undefined ? s.source.name : `+${s.source.offsetMinutes / 60}h`} ${s.from.toISOString().slice(0, 16)}..${s.until.toISOString().slice(0, 16)}`)
  }
  t.same(plan('1d', 'Europe/Madrid', madrid), [
    'raw 2025-11-26T05:30..2025-11-26T06:00',
    'hourly 2025-11-26T06:00..2025-11-26T23:00',
    '+1h 2025-11-26T23:00..2026-03-28T23:00',
    'hourly 2026-03-28T23:00..2026-03-29T22:00',
    '+2h 2026-03-29T22:00..2026-10-24T22:00',
    'hourly 2026-10-24T22:00..2026-10-25T23:00',
    '+1h 2026-10-25T23:00..2026-11-25T23:00',
    'hourly 2026-11-25T23:00..2026-11-26T00:00'
  ], 'the partial first day (its first half hour raw), winter, the 23-hour day, summer, the 25-hour day, winter, the partial last day')
  t.same(plan('1M', 'Europe/Madrid', new Map([[3_600_000, dayOffsetTier(3_600_000)]])).filter((s) => s.startsWith('+')).length, 2, 'only the offsets that have a tier: the winters')
  const sources = (segments: string[]): string[] => [...new Set(segments.map((s) => s.split(' ')[0] ?? ''))].sort()
  t.same(sources(plan('1d', 'Europe/Madrid', new Map())), ['hourly', 'raw'], 'no tier: hours, as before')
  t.same(sources(plan('6h', 'Europe/Madrid', madrid)), ['hourly', 'raw'], 'buckets shorter than a day: hours')
  t.same(sources(plan('1w', 'Europe/London', new Map())), ['daily', 'hourly', 'raw'], "London's winter days are UTC days: the daily tier")
  t.same(plan('1d', 'Asia/Kolkata', madrid).map((s) => s.split(' ')[0]), ['raw'], 'half-hour offsets: raw rows')
})
