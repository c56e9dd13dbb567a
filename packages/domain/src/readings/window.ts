import { dayOffsetTiers, readingsExtent, type TierPiece, tierBoundsText, TIERS } from '@esp/db'
import { type ApiError, errors } from '../errors.js'
import { nextTurn, slicer } from '../turns.js'
import type { HistoryContext, HistoryParams } from './history.js'
import { planSegments, planZoneSegments, type Segment } from './planner.js'
import { bucketStart, countBuckets, nextBucket, type Rollup } from './rollup.js'
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
}

/**
 * The request's work, bounded before any of it starts (issue 33): the range is clamped to the
 * sensors' stored extent, its buckets counted per series and over all series, and the caller
 * charged for them; over a bound the request is a 400 naming it, before anything is read.
 */
export async function boundedWindow (ctx: HistoryContext, rollup: Rollup, from: Date, to: Date, params: HistoryParams, deviceId: number, sensorIds: readonly number[]): Promise<ReadWindow> {
  const series = Math.max(1, sensorIds.length)
  const maxValues = ctx.maxValues ?? MAX_VALUES_FACTOR * ctx.maxBuckets
  if (rollup.raw) {
    // Points are not known before they are read: each series reads at most its share, plus one
    // that tells it went over.
    const perSeries = Math.min(ctx.maxBuckets, Math.floor(maxValues / series))
    return { from, to, empty: false, perSeries }
  }
  const asked = countBuckets(from, to, rollup)
  let window: ReadWindow = { from, to, empty: false, perSeries: asked }
  if (asked > CLAMP_ABOVE_BUCKETS) {
    const extent = await readingsExtent(ctx.runner, deviceId, sensorIds)
    const start = extent.first !== null && extent.first > from ? extent.first : from
    const end = extent.last !== null && extent.last < to ? extent.last : to
    const empty = extent.first === null || extent.last === null || start > end
    window = { from: start, to: end, empty, perSeries: empty ? 0 : countBuckets(start, end, rollup) }
  }
  // With all_intervals every bucket of the range is answered, holding readings or not.
  const buckets = asksAllIntervals(rollup, params) ? asked : window.perSeries
  if (buckets > ctx.maxBuckets) throw tooManyBuckets(buckets, rollup.text, ctx.maxBuckets)
  if (buckets * series > maxValues) throw tooManyValues(buckets, series, maxValues)
  await ctx.charge?.(buckets * series)
  return window
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
