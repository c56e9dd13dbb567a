import { bucketsPerDay, dayOffsetTiers, MAX_NTH_READING, nthReadingTime, readingsExtent, type TierPiece, tierBoundsText, TIERS } from '@esp/db'
import { type ApiError, errors } from '../errors.js'
import { nextTurn, slicer } from '../turns.js'
import type { HistoryContext, HistoryParams } from './history-context.js'
import { planSegments, planZoneSegments, type Segment } from './planner.js'
import { bucketStart, bucketStartMs, countBuckets, nextBucket, type Rollup } from './rollup.js'
import type { ZoneOffsets } from './zone.js'

// A history request's window and plan (issue 33): its range clamped to the stored extent and its
// values counted before it reads, and where each piece of it is read from, made once for all of
// its series, in slices of the event loop.

/**
 * Long raw segments are read in parallel pieces: a fine rollup over weeks aggregates tens of
 * thousands of rows, and two connections use both cores. Buckets cut by a piece boundary are
 * merged like any other partial states.
 */
const RAW_PIECE_MS = 7 * 24 * 3600 * 1000
const RAW_PIECES_MAX = 4
/**
 * On a zone's clock, neighbouring tier segments joined into runs, each read in one statement
 * (TierPiece: the same shape); raw segments stay apart, so the parts still come in time order.
 */
function zoneTierRuns (segments: Segment[], zoned: boolean): Array<Segment | TierPiece[]> {
  if (!zoned) return segments
  const runs: Array<Segment | TierPiece[]> = []
  for (const segment of segments) {
    const last = runs.at(-1)
    if (segment.source === 'raw') runs.push(segment)
    else if (Array.isArray(last)) last.push({ tier: segment.source, from: segment.from, until: segment.until })
    else runs.push([{ tier: segment.source, from: segment.from, until: segment.until }])
  }
  return runs
}

export function splitRaw (segment: Segment): Segment[] {
  if (segment.source !== 'raw') return [segment]
  const length = segment.until.getTime() - segment.from.getTime()
  const pieces = Math.min(RAW_PIECES_MAX, Math.ceil(length / RAW_PIECE_MS))
  if (pieces <= 1) return [segment]
  const step = Math.ceil(length / pieces)
  return Array.from({ length: pieces }, (_, i) => ({
    source: 'raw' as const,
    from: new Date(segment.from.getTime() + i * step),
    until: new Date(Math.min(segment.until.getTime(), segment.from.getTime() + (i + 1) * step))
  }))
}

export const tooManyBuckets = (count: number, rollup: string, max: number): ApiError => errors.badRequest(
  `This request spans ${count} buckets of ${rollup}; at most ${max} are answered at once. Use a larger rollup or a shorter from/to range.`,
  { rollup: [`gives ${count} buckets, more than ${max}`] })

/** Raw readings have no buckets to fill; their bound is the number of points. */
export const asksAllIntervals = (rollup: Rollup, params: HistoryParams): boolean => !rollup.raw && (params.all_intervals === 'true' || params.all_intervals === '1')

/**
 * Every series of a request is read over the requested range clamped to the stored extent of
 * its sensors, so what a request costs follows the data it can answer, never the range it names
 * (1970 to 2200 in a time zone is the same work as the sensor's own months). A range short
 * enough to hold at most this many buckets is read as asked: its work is small anyway, and the
 * extent would cost a round trip first.
 */
const CLAMP_ABOVE_BUCKETS = 2_000
/** With several sensors, the values of all their series together are bounded by this many times maxBuckets. */
export const MAX_VALUES_FACTOR = 4

/**
 * Values answered for one more unit of the caller's rate limit: a request of the contract's
 * default form (a sensor's hourly values over six weeks, 1,008) costs nothing more than its own
 * unit, and the largest (4 × 50,000 values over a zone's clock) about a hundred more.
 */
export const VALUES_PER_RATE_UNIT = 2_000
/** The rate-limit units a history request of `values` values costs beyond its first. */
export const historyCostUnits = (values: number): number => Math.floor(values / VALUES_PER_RATE_UNIT)

/** Where a request's series are read, and how many of its values that gives at most. */
export interface ReadWindow {
  from: Date
  /** inclusive, as `to` */
  to: Date
  /** no reading of the sensors anywhere in the range: nothing to read */
  empty: boolean
  /** the most buckets a series answers (for raw readings, the most points read) */
  perSeries: number
  /** a window of more than maxBuckets buckets of one sensor: read in runs of buckets (chunksOf) */
  chunks?: ChunkPlan
}

/**
 * A long window of one sensor, read a run of buckets at a time: where its data lies, per UTC day,
 * and how many of its buckets can hold data at most.
 */
export interface ChunkPlan {
  /** (day start in epoch ms, the most buckets holding data that day) pairs, ascending: bucketsPerDay */
  days: Float64Array
  /** the most buckets of the window that hold data: what the request is counted and charged as */
  estimate: number
  /** more than maxBuckets of them: the answer is written as it is read (HistoryContext.stream) */
  streamed: boolean
}

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

/**
 * The most buckets of `rollup` that one hour of the hourly tier can meet: all of those it is cut
 * into when the rollup divides the hour (and aligns with it: every fixed rollup's origin is an
 * hour's start), one when the hour divides the rollup's buckets, else those a stretch of its
 * length can cross. On a wall clock a bucket may be shorter than it is named (the day the clocks
 * go forward, the half hour Lord Howe moves them by).
 */
export function bucketsPerHour (rollup: Rollup): number {
  if (rollup.zone === undefined) {
    // Months and years start on UTC midnights.
    if (rollup.fixedMs === null) return 1
    if (HOUR_MS % rollup.fixedMs === 0) return HOUR_MS / rollup.fixedMs
    if (rollup.fixedMs % HOUR_MS === 0) return 1
    return Math.ceil(HOUR_MS / rollup.fixedMs) + 1
  }
  const named = rollup.fixedMs ?? rollup.value * (rollup.unit === 'y' ? 365 : 28) * DAY_MS
  return Math.ceil(HOUR_MS / Math.max(named - HOUR_MS, named / 2)) + 1
}

/** Over the streamed bound (HistoryContext.stream.maxBuckets), before any work. */
export const tooManyStreamed = (count: number, rollup: string, max: number): ApiError => errors.badRequest(
  `This request may answer up to ${count} buckets of ${rollup} holding readings; at most ${max} are answered by one request. Use a larger rollup or a shorter from/to range.`,
  { rollup: [`gives up to ${count} buckets holding readings, more than ${max}`] })

const notStreamed = (count: number, rollup: string, max: number): ApiError => errors.badRequest(
  `This request may answer up to ${count} buckets of ${rollup} holding readings; at most ${max} are answered at once with pretty or callback (without them, a longer answer is streamed). Use a larger rollup or a shorter from/to range.`,
  { rollup: [`gives up to ${count} buckets holding readings, more than ${max}`] })

/** Options of boundedWindow. */
export interface WindowOptions {
  /** where reading stops (inclusive), before `to` when `limit` cut the range short; the range's buckets are still those up to `to` */
  readTo?: Date
  /** one sensor's window, which may be read in runs of buckets (chunksOf) */
  chunked?: boolean
}

/**
 * The request's work, bounded before any of it starts (issues 33 and 35): the range is clamped to
 * the sensors' stored extent and its buckets counted per series and over all series. One sensor's
 * window of more buckets than maxBuckets is counted by the buckets that can hold data, from the
 * hourly tier (bucketsPerDay, one statement over the tier rows of the window), and read in runs of
 * buckets (chunksOf): gathered into one answer when they are at most maxBuckets, else streamed
 * (up to ctx.stream.maxBuckets). The caller is charged for the count; over a bound the request is a
 * 400 naming it, before anything is read.
 */
export async function boundedWindow (ctx: HistoryContext, rollup: Rollup, from: Date, to: Date, params: HistoryParams, deviceId: number, sensorIds: readonly number[], options: WindowOptions = {}): Promise<ReadWindow> {
  const series = Math.max(1, sensorIds.length)
  const maxValues = ctx.maxValues ?? MAX_VALUES_FACTOR * ctx.maxBuckets
  const readTo = options.readTo !== undefined && options.readTo < to ? options.readTo : to
  if (rollup.raw) {
    // Points are not known before they are read: each series reads at most its share, plus one
    // that tells it went over.
    const perSeries = Math.min(ctx.maxBuckets, Math.floor(maxValues / series))
    return { from, to: readTo, empty: false, perSeries }
  }
  const asked = countBuckets(from, to, rollup)
  let window: ReadWindow = { from, to: readTo, empty: false, perSeries: countBuckets(from, readTo, rollup) }
  if (window.perSeries > CLAMP_ABOVE_BUCKETS) {
    const extent = await readingsExtent(ctx.runner, deviceId, sensorIds)
    const start = extent.first !== null && extent.first > from ? extent.first : from
    const end = extent.last !== null && extent.last < readTo ? extent.last : readTo
    const empty = extent.first === null || extent.last === null || start > end
    window = { from: start, to: end, empty, perSeries: empty ? 0 : countBuckets(start, end, rollup) }
  }
  // With all_intervals every bucket of the range is answered, holding readings or not.
  const allIntervals = asksAllIntervals(rollup, params)
  const sensorId = sensorIds[0]
  if (options.chunked === true && !allIntervals && sensorIds.length === 1 && sensorId !== undefined && window.perSeries > ctx.maxBuckets) {
    return await chunkedWindow(ctx, rollup, window, { deviceId, sensorId })
  }
  const buckets = allIntervals ? asked : window.perSeries
  if (buckets > ctx.maxBuckets) throw tooManyBuckets(buckets, rollup.text, ctx.maxBuckets)
  if (buckets * series > maxValues) throw tooManyValues(buckets, series, maxValues)
  await ctx.charge?.(buckets * series)
  return window
}

/** A window of one sensor over maxBuckets buckets, counted by the buckets that can hold data (see boundedWindow). */
async function chunkedWindow (ctx: HistoryContext, rollup: Rollup, window: ReadWindow, base: { deviceId: number, sensorId: number }): Promise<ReadWindow> {
  const days = await bucketsPerDay(ctx.runner, { ...base, from: window.from, until: new Date(window.to.getTime() + 1), perHour: bucketsPerHour(rollup) })
  let held = 0
  for (let i = 1; i < days.length; i += 2) held += days[i] as number
  const estimate = Math.min(window.perSeries, held)
  const streamed = estimate > ctx.maxBuckets
  if (streamed) {
    const max = ctx.stream?.maxBuckets
    // Without streaming (a JSON-P or pretty answer, written whole), maxBuckets is the bound.
    if (max === undefined) throw notStreamed(estimate, rollup.text, ctx.maxBuckets)
    if (estimate > max) throw tooManyStreamed(estimate, rollup.text, max)
  }
  await ctx.charge?.(estimate)
  return { ...window, chunks: { days, estimate, streamed } }
}

/** A run of a window's buckets, read and answered at once: [from, until), on bucket boundaries. */
export interface Chunk { from: Date, until: Date }

/**
 * The window of a ChunkPlan in runs of whole buckets, newest first (the answer's order), each
 * holding at most maxBuckets buckets with data by the plan's count (and on a zone's clock spanning
 * at most maxBuckets buckets: its tier runs are grouped by every bucket's bounds). A run is made
 * of whole UTC days of the plan, cut on the rollup's bucket boundaries (on a zone's clock, its
 * own); a day that alone may hold more is cut where its maxBuckets-th reading from the newest lies
 * (nthReadingTime), so each piece holds at most that many readings, and so buckets.
 *
 * In UTC the runs cover the whole window, gaps in the tier's rows included; on a zone's clock they
 * cover the days the hourly tier has rows for, and skip the rest (a long run of buckets of nothing
 * would cost its bounds all the same). On TimescaleDB a reading written below the hourly tier's
 * refreshed watermark shows in neither until the next refresh, as in every tier-served rollup.
 */
export async function * chunksOf (ctx: HistoryContext, rollup: Rollup, window: ReadWindow, base: { deviceId: number, sensorId: number }): AsyncGenerator<Chunk> {
  const days = window.chunks?.days ?? new Float64Array(0)
  const max = ctx.maxBuckets
  const zoned = rollup.zone !== undefined
  const fromMs = window.from.getTime()
  const startOf = (i: number): number => days[2 * i] as number
  const heldOn = (i: number): number => days[2 * i + 1] as number
  // A bucket boundary at or before t, not before the window.
  const floor = (t: number): number => Math.max(fromMs, bucketStartMs(t, rollup))
  // A bucket boundary at or after t.
  const ceil = (t: number): number => {
    const start = bucketStartMs(t, rollup)
    return start === t ? t : nextBucket(new Date(start), rollup).getTime()
  }
  const spans = (lo: number, hi: number): number => countBuckets(new Date(lo), new Date(hi - 1), rollup)
  const slice = slicer()
  let hi = window.to.getTime() + 1
  let top = days.length / 2 - 1
  while (hi > fromMs) {
    // Days wholly at or after hi are answered; one cut by hi keeps its older part.
    while (top >= 0 && startOf(top) >= hi) top--
    if (top < 0) {
      if (!zoned) yield { from: new Date(fromMs), until: new Date(hi) }
      return
    }
    if (zoned) hi = Math.min(hi, ceil(Math.min(startOf(top) + DAY_MS, hi)))
    let lo = floor(startOf(top))
    // The days [lo, hi) meets, newest first, and what they may hold.
    let next = top
    let held = 0
    while (next >= 0 && startOf(next) + DAY_MS > lo) held += heldOn(next--)
    if (held > max || (zoned && spans(lo, hi) > max)) {
      yield * denseChunks(ctx, rollup, lo, hi, base)
      hi = lo
      continue
    }
    while (next >= 0) {
      const candidate = floor(startOf(next))
      let further = next
      let more = 0
      while (further >= 0 && startOf(further) + DAY_MS > candidate) more += heldOn(further--)
      if (held + more > max || (zoned && spans(candidate, hi) > max)) break
      lo = candidate
      held += more
      next = further
      if (slice.due()) await slice.turn()
    }
    // In UTC the oldest run reaches down to the window's start.
    if (!zoned && next < 0) lo = fromMs
    yield { from: new Date(lo), until: new Date(hi) }
    hi = lo
  }
}

/**
 * [lo, hi) in runs of at most maxBuckets readings, newest first: each run ends where the previous
 * began and starts on the boundary of the bucket its maxBuckets-th reading from the newest lies
 * in, so it holds those readings and the older ones of that bucket: at most maxBuckets buckets.
 */
async function * denseChunks (ctx: HistoryContext, rollup: Rollup, lo: number, hi: number, base: { deviceId: number, sensorId: number }): AsyncGenerator<Chunk> {
  const n = Math.min(ctx.maxBuckets, MAX_NTH_READING)
  for (let end = hi; end > lo;) {
    const nth = await nthReadingTime(ctx.runner, { ...base, from: new Date(lo), until: new Date(end), n, newest: true })
    const cut = nth === null ? lo : Math.max(lo, bucketStartMs(nth.getTime(), rollup))
    yield { from: new Date(cut), until: new Date(end) }
    end = cut
  }
}

const tooManyValues = (buckets: number, series: number, max: number): ApiError => errors.badRequest(
  `This request asks for ${buckets * series} values (${series} sensors of ${buckets} buckets each); at most ${max} are answered at once. Ask for fewer sensors, a larger rollup or a shorter from/to range.`,
  { sensor_ids: [`give ${buckets * series} values, more than ${max}`] })

/** A run of tier pieces on a zone's clock, with the bounds of its buckets (and their SQL text). */
export interface ZoneRun { pieces: TierPiece[], bounds: number[], boundsText: string }
export interface Plan { zoneAlignment: number | undefined, parts: Array<Segment | ZoneRun> }
const plans = new WeakMap<ReadWindow, Promise<Plan>>()

/** Bounds written as SQL array text per slice: 50,000 of them cost tens of milliseconds. */
const BOUNDS_PER_SLICE = 5_000

/** tierBoundsText of many bounds, with turns of the event loop between its slices. */
async function boundsTextOf (bounds: readonly number[]): Promise<string> {
  if (bounds.length <= BOUNDS_PER_SLICE) return tierBoundsText(bounds)
  const items: string[] = []
  for (let at = 0; at < bounds.length; at += BOUNDS_PER_SLICE) {
    if (at > 0) await nextTurn()
    // Each slice's literal without its braces: the items of one array.
    items.push(tierBoundsText(bounds.slice(at, at + BOUNDS_PER_SLICE)).slice(1, -1))
  }
  return `{${items.join(',')}}`
}

/** The zone's offsets of every year alignmentBetween reads for [from, until), found in slices of the event loop. */
async function offsetsOfYears (zone: ZoneOffsets, from: number, until: number): Promise<void> {
  const slice = slicer()
  for (let year = new Date(from).getUTCFullYear() - 1; year <= new Date(until).getUTCFullYear() + 1; year++) {
    zone.offsetMs(Date.UTC(year, 6, 1))
    if (slice.due()) await slice.turn()
  }
}

/**
 * The start of every bucket that intersects [first, last] (as bucketStartsBetween), then the last
 * one's end: the bounds a zone's tier run is grouped by. Bounded by `limit` (the window was
 * counted before), in slices of SLICE_MS between turns of the event loop.
 */
export async function bucketBounds (first: Date, last: number, rollup: Rollup, limit: number): Promise<number[]> {
  const bounds: number[] = []
  const slice = slicer()
  let start = bucketStart(first, rollup)
  while (start.getTime() <= last) {
    if (bounds.length >= limit) throw new Error(`a zone's tier run spans more buckets than its window (${limit})`)
    bounds.push(start.getTime())
    start = nextBucket(start, rollup)
    if (slice.due()) await slice.turn()
  }
  if (bounds.length > 0) bounds.push(start.getTime())
  return bounds
}

/**
 * Where each piece of the window is read from, and on a zone's clock the bounds of each run's
 * buckets: the same for every series of a request, so worked out once (a walk over the window's
 * days, and tens of thousands of bucket bounds), with turns of the event loop between the steps.
 */
export async function planOf (ctx: HistoryContext, rollup: Rollup, window: ReadWindow): Promise<Plan> {
  let planned = plans.get(window)
  if (planned === undefined) {
    const from = window.from
    const until = new Date(window.to.getTime() + 1)
    planned = (async () => {
      // A zone's offsets are found a year at a time (about a millisecond each, the first time):
      // over centuries, in slices, before alignmentBetween reads them at once.
      if (rollup.zone !== undefined) await offsetsOfYears(rollup.zone, from.getTime(), until.getTime())
      const zoneAlignment = rollup.zone?.alignmentBetween(from.getTime(), until.getTime())
      if (rollup.zone === undefined) return { zoneAlignment, parts: planSegments(rollup, from, until, TIERS).flatMap(splitRaw) }
      const offsetTiers = await dayOffsetTiers(ctx.runner)
      // A year of the window at a time (UTC years: every stored tier aligns with their edges, so
      // the pieces are those of the whole window, a local day at an edge served by hours).
      const plan: Segment[] = []
      const slice = slicer()
      for (let start = from.getTime(); start < until.getTime();) {
        const end = Math.min(until.getTime(), Date.UTC(new Date(start).getUTCFullYear() + 1, 0, 1))
        for (const segment of planZoneSegments(rollup, new Date(start), new Date(end), TIERS, zoneAlignment, offsetTiers)) {
          // Joined again across the years' edges: the plan the whole window would have had.
          const previous = plan.at(-1)
          if (previous !== undefined && previous.source === segment.source && previous.until.getTime() === segment.from.getTime()) previous.until = segment.until
          else plan.push(segment)
        }
        start = end
        if (slice.due()) await slice.turn()
      }
      const parts: Plan['parts'] = []
      for (const segment of zoneTierRuns(plan.flatMap(splitRaw), true)) {
        if (!Array.isArray(segment)) { parts.push(segment); continue }
        const first = segment[0]?.from ?? from
        const bounds = await bucketBounds(first, (segment.at(-1)?.until ?? first).getTime() - 1, rollup, window.perSeries + 2)
        await nextTurn()
        parts.push({ pieces: segment, bounds, boundsText: await boundsTextOf(bounds) })
      }
      return { zoneAlignment, parts }
    })()
    plans.set(window, planned)
  }
  return await planned
}
