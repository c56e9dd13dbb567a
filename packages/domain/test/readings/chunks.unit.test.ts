import t from 'tap'
import fc from 'fast-check'
import type { Runner } from '@esp/db'
import type { HistoryContext } from '../../src/readings/history.js'
import { bucketStartMs, countBuckets, inZone, nextBucket, parseRollup, type Rollup } from '../../src/readings/rollup.js'
import { bucketsPerHour, type Chunk, chunksOf, type ReadWindow } from '../../src/readings/window.js'
import { parseTimeZone } from '../../src/readings/zone.js'

/**
 * The runs a long window is read in (issue 35), against readings made up here: the hourly tier's
 * counts are worked out from them as the database keeps them, and the n-th reading of a range
 * (the only statement the planner runs) is answered from them.
 */

const HOUR = 3_600_000
const DAY = 86_400_000
const START = Date.UTC(2025, 2, 1)

/** The readings' hourly counts as bucketsPerDay answers them: (UTC day, bound) pairs. */
function daysOf (times: readonly number[], rollup: Rollup, from: number, until: number): Float64Array {
  const hours = new Map<number, number>()
  for (const at of times) hours.set(Math.floor(at / HOUR) * HOUR, (hours.get(Math.floor(at / HOUR) * HOUR) ?? 0) + 1)
  const perHour = bucketsPerHour(rollup)
  const days = new Map<number, number>()
  for (const [hour, count] of hours) {
    if (hour + HOUR <= from || hour >= until) continue
    const day = Math.floor(hour / DAY) * DAY
    days.set(day, (days.get(day) ?? 0) + Math.min(count, perHour))
  }
  return Float64Array.from([...days.entries()].sort((a, b) => a[0] - b[0]).flat())
}

/** A Runner that answers the n-th reading's statement from `times` (ascending), and nothing else. */
function readingsRunner (times: readonly number[], statements: { count: number }): Runner {
  return {
    query: async <T extends object>(text: string, params: unknown[] = []): Promise<T[]> => {
      statements.count++
      if (!text.includes('offset')) throw new Error(`unexpected statement: ${text}`)
      const [, , from, until, offset] = params as [number, number, Date, Date, number]
      const inRange = times.filter((at) => at >= from.getTime() && at < until.getTime())
      const ordered = text.includes('desc') ? inRange.reverse() : inRange
      const at = ordered[offset]
      return (at === undefined ? [] : [{ at: new Date(at) }]) as T[]
    },
    copyOutBinary: async () => { throw new Error('not here') }
  }
}

async function plan (times: readonly number[], rollup: Rollup, from: number, to: number, maxBuckets: number): Promise<{ chunks: Chunk[], statements: number }> {
  const statements = { count: 0 }
  const ctx: HistoryContext = { runner: readingsRunner(times, statements), now: () => new Date(to), maxBuckets }
  const window: ReadWindow = { from: new Date(from), to: new Date(to), empty: false, perSeries: countBuckets(new Date(from), new Date(to), rollup), chunks: { days: daysOf(times, rollup, from, to + 1), estimate: 0, streamed: true } }
  const chunks: Chunk[] = []
  for await (const chunk of chunksOf(ctx, rollup, window, { deviceId: 1, sensorId: 1 })) chunks.push(chunk)
  return { chunks, statements: statements.count }
}

const isBoundary = (at: number, rollup: Rollup): boolean => bucketStartMs(at, rollup) === at

const ROLLUPS = ['1ms', '500ms', '1s', '7s', '1m', '7m', '90m', '1h', '3h', '1d', '1w', '1M', '1y']
const ZONES = ['America/New_York', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Europe/Madrid']

const rollupArb = fc.oneof(
  fc.constantFrom(...ROLLUPS).map((text) => parseRollup(text)),
  fc.tuple(fc.constantFrom('1h', '2h', '1d', '1w', '1M'), fc.constantFrom(...ZONES)).map(([text, zone]) => inZone(parseRollup(text), parseTimeZone(zone)))
)
// Bursts of readings (dense ones too: every 10 ms) across months, gaps between them.
const timesArb = fc.array(fc.record({
  at: fc.integer({ min: 0, max: 120 * DAY }),
  count: fc.integer({ min: 1, max: 400 }),
  step: fc.constantFrom(10, 1000, 60_000, 600_000, HOUR)
}), { minLength: 0, maxLength: 8 }).map((bursts) => [...new Set(bursts.flatMap((b) => Array.from({ length: b.count }, (_, i) => START + b.at + i * b.step)))].sort((a, b) => a - b))

t.test('runs are newest first, on bucket boundaries, apart, hold every reading, and at most maxBuckets buckets that have one', async () => {
  await fc.assert(fc.asyncProperty(rollupArb, timesArb, fc.integer({ min: 0, max: 130 * DAY }), fc.integer({ min: 0, max: 130 * DAY }), fc.integer({ min: 10, max: 400 }), async (rollup, times, a, b, maxBuckets) => {
    const from = START + Math.min(a, b)
    const to = START + Math.max(a, b)
    const { chunks } = await plan(times, rollup, from, to, maxBuckets)
    const label = `${rollup.text}${rollup.zone === undefined ? '' : ' zoned'} [${new Date(from).toISOString()}, ${new Date(to).toISOString()}] max ${maxBuckets}`
    let above = to + 1
    for (const chunk of chunks) {
      const lo = chunk.from.getTime()
      const hi = chunk.until.getTime()
      if (!(lo < hi && hi <= above && lo >= from)) throw new Error(`${label}: run [${lo}, ${hi}) out of order under ${above}`)
      if ((lo !== from && !isBoundary(lo, rollup)) || (hi !== to + 1 && !isBoundary(hi, rollup))) throw new Error(`${label}: run [${chunk.from.toISOString()}, ${chunk.until.toISOString()}) cuts a bucket`)
      const buckets = new Set(times.filter((at) => at >= lo && at < hi).map((at) => bucketStartMs(at, rollup)))
      if (buckets.size > maxBuckets) throw new Error(`${label}: run [${chunk.from.toISOString()}, ${chunk.until.toISOString()}) holds ${buckets.size} buckets with readings`)
      // In UTC the runs meet: they cover the whole window.
      if (rollup.zone === undefined && hi !== above) throw new Error(`${label}: a gap under ${above}`)
      above = lo
    }
    if (rollup.zone === undefined && times.some((at) => at >= from && at <= to) && above !== from) throw new Error(`${label}: the runs stop at ${above}`)
    const missed = times.filter((at) => at >= from && at <= to && !chunks.some((c) => at >= c.from.getTime() && at < c.until.getTime()))
    if (missed.length > 0) throw new Error(`${label}: ${missed.length} readings in no run, the first at ${new Date(missed[0] ?? 0).toISOString()}`)
  }), { numRuns: 400 })
})

t.test('runs follow the data: few of them over years of nothing, on a zone\'s clock none over the gaps', async (t) => {
  // Two days of minutes, eight years apart.
  const minutes = (day: number): number[] => Array.from({ length: 1440 }, (_, i) => START + day * DAY + i * 60_000)
  const times = [...minutes(0), ...minutes(8 * 365)]
  const utc = await plan(times, parseRollup('1m'), START, START + 8 * 365 * DAY + DAY - 1, 2000)
  t.same(utc.chunks.map((c) => [c.from.toISOString(), c.until.toISOString()]), [
    [new Date(START + 8 * 365 * DAY).toISOString(), new Date(START + 8 * 365 * DAY + DAY).toISOString()],
    [new Date(START).toISOString(), new Date(START + 8 * 365 * DAY).toISOString()]
  ], 'a run for the newer day, and one down to the start of the window')
  t.equal(utc.statements, 0, 'no statement: the tier counts place them')
  const zoned = await plan(times, inZone(parseRollup('1h'), parseTimeZone('America/New_York')), START, START + 8 * 365 * DAY + DAY - 1, 2000)
  t.equal(zoned.chunks.length, 2)
  t.ok(zoned.chunks.every((c) => countBuckets(c.from, new Date(c.until.getTime() - 1), inZone(parseRollup('1h'), parseTimeZone('America/New_York'))) <= 26), 'each spans its day of data only, not the years between')
})

t.test('a day denser than maxBuckets is cut where its readings are', async (t) => {
  // A day of readings every 10 ms around noon: 20,000 of them in 200 s.
  const times = Array.from({ length: 20_000 }, (_, i) => START + 12 * HOUR + i * 10)
  const rollup = parseRollup('10ms')
  const { chunks, statements } = await plan(times, rollup, START, START + DAY - 1, 5_000)
  t.equal(chunks.length, 5, 'four runs of 5,000 readings, then the rest of the day (none)')
  t.equal(statements, 5, 'a look-up a run')
  for (const chunk of chunks) {
    const held = times.filter((at) => at >= chunk.from.getTime() && at < chunk.until.getTime()).length
    t.ok(held <= 5_000, `${held} readings in [${chunk.from.toISOString()}, ${chunk.until.toISOString()})`)
  }
})

t.test('an hour meets at most bucketsPerHour buckets of a rollup, on any clock', async (t) => {
  fc.assert(fc.property(rollupArb, fc.integer({ min: 0, max: 3 * 365 * 24 }), (rollup, hours) => {
    const hour = Date.UTC(2024, 0, 1) + hours * HOUR
    // Sub-minute rollups are UTC's: counted, rather than walked a millisecond at a time.
    if (rollup.fixedMs !== null && rollup.fixedMs < 60_000) return countBuckets(new Date(hour), new Date(hour + HOUR - 1), rollup) <= bucketsPerHour(rollup)
    let met = 0
    for (let start = bucketStartMs(hour, rollup); start < hour + HOUR; start = nextBucket(new Date(start), rollup).getTime()) met++
    return met <= bucketsPerHour(rollup)
  }), { numRuns: 5_000 })
  // The hours the clocks change on, where a wall-clock bucket is shortest.
  for (const [zone, at] of [['Australia/Lord_Howe', '2025-10-04T15:00:00Z'], ['America/New_York', '2025-03-09T07:00:00Z'], ['Europe/Madrid', '2025-10-26T01:00:00Z']] as const) {
    for (const text of ['1h', '2h', '1d']) {
      const rollup = inZone(parseRollup(text), parseTimeZone(zone))
      for (let hour = Date.parse(at) - 3 * HOUR; hour <= Date.parse(at) + 3 * HOUR; hour += HOUR) {
        let met = 0
        for (let start = bucketStartMs(hour, rollup); start < hour + HOUR; start = nextBucket(new Date(start), rollup).getTime()) met++
        t.ok(met <= bucketsPerHour(rollup), `${zone} ${text} from ${new Date(hour).toISOString()}: ${met}`)
      }
    }
  }
  t.equal(bucketsPerHour(parseRollup('1m')), 60)
  t.equal(bucketsPerHour(parseRollup('7m')), 10)
  t.equal(bucketsPerHour(parseRollup('1d')), 1)
  t.equal(bucketsPerHour(parseRollup('1M')), 1)
})
