import { addValue, BucketStates, dayOffsetTiers, mergeInto, rawPairs, rawPoints, rawStates, readingsExtent, type Runner, type TierPiece, tierBoundsText, tierStates, tierStatesIn, TIERS } from '@esp/db'
import { ApiError, errors } from '../errors.js'
import { formatTimestamp } from '../time.js'
import { type AggregateState, finalize, isRollupFunction, rollupFunctions, type RollupFunction, stateOf } from './aggregate-state.js'
import { planSegments, planZoneSegments, type Segment } from './planner.js'
import { RollupSeries } from './rollup-series.js'
import { bucketStart, bucketStartMs, countBuckets, inZone, nextBucket, parseRollup, type Rollup, rollupSql } from './rollup.js'
import { parseSensorIdParam, parseTimeParam } from './time-params.js'
import { parseTimeZone } from './zone.js'

export interface HistoryParams {
  sensor_id?: string | undefined
  sensor_key?: string | undefined
  rollup?: string | undefined
  function?: string | undefined
  from?: string | undefined
  to?: string | undefined
  all_intervals?: string | undefined
  /** an IANA zone whose wall clock hours, days, weeks, months and years follow (default UTC) */
  timezone?: string | undefined
  /** `true`: each bucket also carries the number of readings in it */
  coverage?: string | undefined
  /** several sensors, one series each (histories.ts): ids separated by commas, or `all` */
  sensor_ids?: string | undefined
  sensor_keys?: string | undefined
}

/** Queries run through a Runner, so the same code serves postgres.js and PGlite (TimescaleDB) alike. */
export interface HistoryContext {
  runner: Runner
  now: () => Date
  maxBuckets: number
  /** the most raw readings a piece folds in the process (RAW_PAIRS_MAX unless set) */
  rawPairsMax?: number
  /** the most values (series × buckets) one request answers; MAX_VALUES_FACTOR × maxBuckets unless set */
  maxValues?: number
  /**
   * Called with the number of values a request will answer once that is known and before the
   * work starts (for raw readings, once read): the caller's rate limit takes more of an expensive
   * request, and may refuse it (a 429) before anything is read.
   */
  charge?: (values: number) => Promise<void> | void
}

export interface HistoryResult {
  device_id: number
  sensor_id: number
  sensor_key: string | null
  component_id: number | null
  rollup: string
  function: RollupFunction
  from: string
  to: string
  sample_size: number
  /** newest first; its JSON is the contract's [recorded_at, value] pairs */
  readings: RollupSeries
}

/** The response's JSON bytes, its thousands of readings written straight from their numbers. */
export function historyJson (result: HistoryResult): Buffer {
  const { readings, ...head } = result
  return readings.json(`${JSON.stringify(head).slice(0, -1)},`)
}

/**
 * Long raw segments are read in parallel pieces: a fine rollup over weeks aggregates tens of
 * thousands of rows, and two connections use both cores. Buckets cut by a piece boundary are
 * merged like any other partial states.
 */
const RAW_PIECE_MS = 7 * 24 * 3600 * 1000
const RAW_PIECES_MAX = 4
/**
 * A raw piece denser than this (a reading a second over days) is grouped in PostgreSQL instead
 * of folded here: its pairs would be megabytes in the process.
 */
const RAW_PAIRS_MAX = 200_000
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

function splitRaw (segment: Segment): Segment[] {
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

/** Without `from`, the window is the six weeks before `to` (behaviour.md §7). */
export const DEFAULT_WINDOW_MS = 6 * 7 * 24 * 3600 * 1000
const HOUR_MS = 3_600_000
const HOUR = { interval: '1 hour', origin: '1970-01-01T00:00:00.000Z' }

/**
 * The bucket of each of a run of ascending instants. In a zone a bucket's bounds are worked out
 * once and the instants inside it compared with them, rather than each converted to wall time.
 */
function bucketKeyer (rollup: Rollup): (t: number) => number {
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

const tooManyBuckets = (count: number, rollup: string, max: number): ApiError => errors.badRequest(
  `This request spans ${count} buckets of ${rollup}; at most ${max} are answered at once. Use a larger rollup or a shorter from/to range.`,
  { rollup: [`gives ${count} buckets, more than ${max}`] })

/**
 * States from raw (time, value) pairs in time order, as the SQL aggregates would give them: a
 * null value (NaN) is counted nowhere, but a bucket's first and last pairs give its first and
 * last, whatever their values.
 */
function foldPairs (pairs: Float64Array, rollup: Rollup): BucketStates {
  const states = new BucketStates()
  const state = stateOf(0, 0)
  let i = 0
  while (i < pairs.length) {
    const bucket = bucketStartMs(pairs[i] as number, rollup)
    // Pairs come in time order: a bucket's end is worked out once, not a bucket start per pair.
    const end = nextBucket(new Date(bucket), rollup).getTime()
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

/** The sensor asked for by id or key; the key is the device kit's first (contract: Kit). */
export async function resolveSensor (runner: Runner, deviceId: number, id: number | null, key: string | null) {
  const [row] = await runner.query<{ id: number, key: string | null, component_id: number | null }>(`
    select s.id, coalesce(ks.key, c.key, s.default_key) as key, c.id as component_id
    from sensors s
    left join components c on c.sensor_id = s.id and c.device_id = $1
    left join kit_sensors ks on ks.sensor_id = s.id and ks.kit_id = (select kit_id from devices where id = $1)
    where (s.id = $2::int) or ($2::int is null and (ks.key = $3 or s.default_key = $3))
    order by (ks.key is not null) desc, (c.id is not null) desc, s.id
    limit 1`, [deviceId, id, key])
  if (row === undefined) throw errors.notFound('Sensor', id ?? key ?? '')
  return row
}

/**
 * `GET /devices/:id/readings`: the planner serves each bucket from the coarsest stored tier that
 * divides and aligns with it, and raw rows elsewhere; states are merged per bucket and finalized.
 * The queries start at once, beside the caller's `access` check (the device exists, the viewer may
 * see it) and beside the sensor's resolution when its id is given: one round trip's wait instead
 * of three. Nothing is answered before `access` settles, and its error outranks any found here.
 */
export async function readingsHistory (ctx: HistoryContext, deviceId: number, params: HistoryParams, access: Promise<unknown> = Promise.resolve()): Promise<HistoryResult> {
  const [, answer] = await inOrderOfPrecedence(access, answerHistory(ctx, deviceId, params))
  return answer
}

/**
 * Both values once both promises settle; otherwise the first one's error, then the second's,
 * whichever failed first in time: work started side by side still answers as if done in order.
 */
export async function inOrderOfPrecedence<A, B> (first: Promise<A>, second: Promise<B>): Promise<[A, B]> {
  const [a, b] = await Promise.allSettled([first, second])
  if (a.status === 'rejected') throw a.reason
  if (b.status === 'rejected') throw b.reason
  return [a.value, b.value]
}

interface HistoryRequest { rollup: Rollup, fn: RollupFunction, from: Date, to: Date }

/** What every form of the request shares: rollup (on its zone's clock), function and range. */
export function historyRequest (ctx: HistoryContext, params: HistoryParams, sensorsMissing: boolean, sensorsName: string): HistoryRequest {
  const missing = [params.rollup === undefined || params.rollup.trim() === '' ? 'rollup' : null, sensorsMissing ? sensorsName : null].filter((m): m is string => m !== null)
  if (missing.length > 0) throw errors.parameterMissing(missing)
  const rollup: Rollup = inZone(parseRollup(params.rollup), parseTimeZone(params.timezone))
  const fn = params.function === undefined || params.function === '' ? 'avg' : params.function
  if (!isRollupFunction(fn)) throw errors.badRequest(`function must be one of ${rollupFunctions.join(', ')}`, { function: ['is not included in the list'] })
  const to = parseTimeParam('to', params.to) ?? ctx.now()
  const from = parseTimeParam('from', params.from) ?? new Date(to.getTime() - DEFAULT_WINDOW_MS)
  if (from > to) throw errors.badRequest('from must not be after to', { from: ['is after to'] })
  return { rollup, fn, from, to }
}

async function answerHistory (ctx: HistoryContext, deviceId: number, params: HistoryParams): Promise<HistoryResult> {
  const { rollup, fn, from, to } = historyRequest(ctx, params, (params.sensor_id ?? '') === '' && (params.sensor_key ?? '') === '', 'sensor_key OR sensor_id')
  const runner = ctx.runner
  const askedId = parseSensorIdParam(params.sensor_id)
  const sensor = resolveSensor(runner, deviceId, askedId, askedId !== null ? null : (params.sensor_key ?? '').trim())
  // Buckets of a given id are read beside its resolution, which must still find it: a missing
  // sensor is a 404, whatever the buckets gave.
  const buckets = (async () => {
    const sensorId = askedId ?? (await sensor).id
    const window = await boundedWindow(ctx, rollup, from, to, params, deviceId, [sensorId])
    return await readBuckets(ctx, rollup, fn, from, to, params, { deviceId, sensorId }, window)
  })()
  const [resolved, read] = await inOrderOfPrecedence(sensor, buckets)
  return {
    device_id: deviceId,
    sensor_id: resolved.id,
    sensor_key: resolved.key,
    component_id: resolved.component_id,
    rollup: rollup.text,
    function: fn,
    from: formatTimestamp(from),
    to: formatTimestamp(to),
    sample_size: read.sampleSize,
    readings: read.readings
  }
}

export interface Buckets { readings: RollupSeries, sampleSize: number }

/** Raw readings have no buckets to fill; their bound is the number of points. */
const asksAllIntervals = (rollup: Rollup, params: HistoryParams): boolean => !rollup.raw && (params.all_intervals === 'true' || params.all_intervals === '1')

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

export async function readBuckets (ctx: HistoryContext, rollup: Rollup, fn: RollupFunction, from: Date, to: Date, params: HistoryParams, base: { deviceId: number, sensorId: number }, window: ReadWindow): Promise<Buckets> {
  const runner = ctx.runner
  const allIntervals = asksAllIntervals(rollup, params)
  const coverage = params.coverage === 'true' || params.coverage === '1'
  if (window.empty) {
    const none = new Float64Array(0)
    if (allIntervals) return await everyInterval(ctx, rollup, from, to, window, coverage, { starts: none, values: none, counts: none, buckets: 0, sampleSize: 0 })
    return { readings: new RollupSeries(none, none, coverage ? none : undefined), sampleSize: 0 }
  }
  const readFrom = window.from
  const until = new Date(window.to.getTime() + 1)

  if (rollup.raw) {
    const points = await rawPoints(runner, { ...base, from: readFrom, until, limit: window.perSeries + 1 })
    if (points.length > window.perSeries) throw tooManyBuckets(points.length, rollup.text, window.perSeries)
    await ctx.charge?.(points.length)
    const starts = Float64Array.from(points, (p) => p.recorded_at.getTime())
    const values = Float64Array.from(points, (p) => finalize(stateOf(p.recorded_at.getTime(), p.value), fn) ?? NaN)
    // A null value is still a reading: the count counts rows, as sample_size does.
    return { readings: new RollupSeries(starts, values, coverage ? new Float64Array(points.length).fill(1) : undefined), sampleSize: points.length }
  }

  // On a zone's wall clock, SQL groups by the longest step its offsets align with (an hour in most
  // of the world), and the buckets are found here; in UTC it bins by the rollup itself.
  const { zoneAlignment, parts: planned } = await planOf(ctx, rollup, window)
  const sqlBins = zoneAlignment === undefined ? rollupSql(rollup) : null
  const bin = sqlBins?.kind === 'bin'
    ? { interval: sqlBins.interval, origin: sqlBins.origin }
    : zoneAlignment === undefined || zoneAlignment % HOUR_MS === 0 ? HOUR : { interval: `${zoneAlignment} milliseconds`, origin: HOUR.origin }
  // Raw rows binned in SQL by the rollup itself are already keyed by their bucket.
  const binned = sqlBins?.kind === 'bin'
  const keyOf = bucketKeyer(rollup)
  // A zone's whole days come from its offsets' daily tiers where the deployment keeps them.
  const parts = await Promise.all(planned.map(async (segment) => {
    if ('pieces' in segment) {
      // On a zone's clock, PostgreSQL merges the tiers' rows into the buckets, given their bounds:
      // a run of tier pieces (days of several offsets, hours between them) in one statement.
      return { rows: await tierStatesIn(runner, segment.pieces, { ...base, fn, bounds: segment.bounds, boundsText: segment.boundsText }), binned: true }
    }
    const q = { ...base, from: segment.from, until: segment.until }
    if (segment.source !== 'raw') return { rows: await tierStates(runner, segment.source, { ...q, fn }), binned: false }
    // Folded here, from the rows packed as pairs: PostgreSQL's grouping of them (a hash table,
    // and an array a bucket for first and last) cost it more than reading them; too dense a
    // piece is grouped there all the same.
    const max = ctx.rawPairsMax ?? RAW_PAIRS_MAX
    const pairs = await rawPairs(runner, { ...q, limit: max + 1 })
    if (pairs.length <= 2 * max) return { rows: foldPairs(pairs, rollup), binned: true }
    return { rows: await rawStates(runner, { ...q, ...bin, fn }), binned }
  }))
  // Segments come in time order and each one's rows ascend, so buckets come out ascending and a
  // bucket cut by a segment boundary is two neighbours: one linear pass, no map and no sort, and
  // each bucket finalized as it is complete. Two states are reused throughout: no object a bucket.
  const capacity = parts.reduce((sum, part) => sum + part.rows.length, 0)
  const starts = new Float64Array(capacity)
  const values = new Float64Array(capacity)
  const counts = new Float64Array(coverage ? capacity : 0)
  let buckets = 0
  let sampleSize = 0
  let current: AggregateState = stateOf(0, 0)
  let next: AggregateState = stateOf(0, 0)
  let currentKey = -Infinity
  const complete = (): void => {
    starts[buckets] = currentKey
    values[buckets] = finalize(current, fn) ?? NaN
    if (coverage) counts[buckets] = current.count
    sampleSize += current.count
    buckets++
  }
  for (const part of parts) {
    const rows = part.rows
    for (let i = 0; i < rows.length; i++) {
      if (rows.count(i) === 0) continue
      const key = part.binned ? rows.bucket(i) : keyOf(rows.bucket(i))
      if (key === currentKey) {
        mergeInto(current, rows.read(i, next))
        continue
      }
      if (key < currentKey) throw new Error(`rollup states out of order: ${key} after ${currentKey}`)
      if (currentKey !== -Infinity) complete()
      const done = current
      current = rows.read(i, next)
      next = done
      currentKey = key
    }
  }
  if (currentKey !== -Infinity) complete()

  if (allIntervals) return await everyInterval(ctx, rollup, from, to, window, coverage, { starts, values, counts, buckets, sampleSize })
  const newestFirst = (column: Float64Array): Float64Array => column.subarray(0, buckets).reverse()
  return { readings: new RollupSeries(newestFirst(starts), newestFirst(values), coverage ? newestFirst(counts) : undefined), sampleSize }
}

/** A run of tier pieces on a zone's clock, with the bounds of its buckets (and their SQL text). */
interface ZoneRun { pieces: TierPiece[], bounds: number[], boundsText: string }
interface Plan { zoneAlignment: number | undefined, parts: Array<Segment | ZoneRun> }
const plans = new WeakMap<ReadWindow, Promise<Plan>>()

/** A turn of the event loop: long work of one request lets others' in between its steps. */
const nextTurn = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }
/**
 * The longest a request's loop over buckets holds the event loop before it lets others' work in:
 * a zone's bucket costs microseconds, but the first use of each of its years about a millisecond.
 */
const SLICE_MS = 8

/** A clock for a loop: `due()` says when SLICE_MS have passed since the last turn it gave. */
function slicer (): { due: () => boolean, turn: () => Promise<void> } {
  let since = performance.now()
  return {
    due: () => performance.now() - since > SLICE_MS,
    turn: async () => { await nextTurn(); since = performance.now() }
  }
}

/**
 * The start of every bucket that intersects [first, last] (as bucketStartsBetween), then the last
 * one's end: the bounds a zone's tier run is grouped by. Bounded by `limit` (the window was
 * counted before), in slices of SLICE_MS between turns of the event loop.
 */
async function bucketBounds (first: Date, last: number, rollup: Rollup, limit: number): Promise<number[]> {
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
async function planOf (ctx: HistoryContext, rollup: Rollup, window: ReadWindow): Promise<Plan> {
  let planned = plans.get(window)
  if (planned === undefined) {
    const from = window.from
    const until = new Date(window.to.getTime() + 1)
    const zoneAlignment = rollup.zone?.alignmentBetween(from.getTime(), until.getTime())
    planned = (async () => {
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
        parts.push({ pieces: segment, bounds, boundsText: tierBoundsText(bounds) })
      }
      return { zoneAlignment, parts }
    })()
    plans.set(window, planned)
  }
  return await planned
}

const everyStart = new WeakMap<ReadWindow, Promise<number[]>>()

interface FoldedBuckets { starts: Float64Array, values: Float64Array, counts: Float64Array, buckets: number, sampleSize: number }

/** all_intervals: every bucket of the requested range (counted against maxBuckets before), newest first, empty ones null. */
async function everyInterval (ctx: HistoryContext, rollup: Rollup, from: Date, to: Date, window: ReadWindow, coverage: boolean, folded: FoldedBuckets): Promise<Buckets> {
  const { starts, values, counts, buckets, sampleSize } = folded
  // The same for every series of the request: worked out once (the last bound is an end).
  let bounds = everyStart.get(window)
  if (bounds === undefined) {
    bounds = bucketBounds(from, to.getTime(), rollup, ctx.maxBuckets).then((found) => found.slice(0, -1))
    everyStart.set(window, bounds)
  }
  const every = await bounds
  const startsOut = new Float64Array(every.length)
  const everyValue = new Float64Array(every.length)
  const everyCount = new Float64Array(coverage ? every.length : 0)
  let i = buckets - 1
  for (let k = every.length - 1, out = 0; k >= 0; k--, out++) {
    const start = every[k] ?? NaN
    while (i >= 0 && (starts[i] as number) > start) i--
    startsOut[out] = start
    const found = i >= 0 && starts[i] === start
    everyValue[out] = found ? values[i] as number : NaN
    if (coverage) everyCount[out] = found ? counts[i] as number : 0
  }
  return { readings: new RollupSeries(startsOut, everyValue, coverage ? everyCount : undefined), sampleSize }
}
