import { Readable } from 'node:stream'
import { type BucketStates, bucketsPerDay, mergeInto, rawPairs, rawStates, type Runner, tierStates, tierStatesIn } from '@esp/db'
import { errors } from '../errors.js'
import type { HistoryContext, HistoryParams, StreamOptions } from './history-context.js'
import { formatTimestamp } from '../time.js'
import { nextTurn } from '../turns.js'
import { type AggregateState, finalize, isRollupFunction, rollupFunctions, type RollupFunction, stateOf } from './aggregate-state.js'
import { RollupSeries } from './rollup-series.js'
import { countBuckets, inZone, parseRollup, type Rollup, rollupSql } from './rollup.js'
import { parseSensorIdParam, parseTimeParam, parseToParam } from './time-params.js'
import { parseTimeZone } from './zone.js'
import { bucketKeyer, foldPairs } from './fold-pairs.js'
import { limitedTo, parseLimitParam } from './limit.js'
import { asksAllIntervals, boundedWindow, bucketBounds, chunksOf, type Plan, planOf, type ReadWindow, tooManyBuckets, tooManyStreamed } from './window.js'

export type { HistoryContext, HistoryParams, StreamOptions } from './history-context.js'

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

/**
 * An answer of more buckets than maxBuckets (HistoryContext.stream): its members but the readings
 * and sample_size, known only once every bucket is read.
 */
export interface StreamedHistory extends Omit<HistoryResult, 'sample_size' | 'readings'> {
  /** the buckets, newest first, a run at a time, each read as the one before is written */
  streamed: AsyncIterable<Buckets>
}

/**
 * The response's JSON bytes, its thousands of readings written straight from their numbers. A
 * streamed answer is a Readable of the same object, `sample_size` last: its bytes come a run of
 * buckets at a time as the reader takes them (backpressure: the next run is read once the last
 * one is taken), and a failure part way destroys it, so the answer is cut short, never closed.
 */
export function historyJson (result: HistoryResult | StreamedHistory): Buffer | Readable {
  if ('streamed' in result) {
    const { streamed, ...head } = result
    // Byte chunks, not objects: the stream buffers one run ahead at most.
    return Readable.from(streamedJson(`${JSON.stringify(head).slice(0, -1)},"readings":[`, streamed), { objectMode: false })
  }
  const { readings, ...head } = result
  return readings.json(`${JSON.stringify(head).slice(0, -1)},`)
}

/**
 * `head`, each run's tuples, then `],"sample_size":N}`. The head goes out with the first run, so
 * a failure reading it is still an error answer of its own.
 */
async function * streamedJson (head: string, runs: AsyncIterable<Buckets>): AsyncGenerator<Buffer> {
  let pending: Buffer | null = Buffer.from(head)
  let follows = false
  let sampleSize = 0
  for await (const run of runs) {
    sampleSize += run.sampleSize
    if (run.readings.length === 0) continue
    const tuples = run.readings.tuplesJson(follows)
    follows = true
    if (pending === null) yield tuples
    else yield Buffer.concat([pending, tuples])
    pending = null
  }
  yield Buffer.from(`${pending === null ? '' : pending.toString()}],"sample_size":${sampleSize}}`)
}

/**
 * A raw piece denser than this (a reading a second over days) is grouped in PostgreSQL instead
 * of folded here: its pairs would be megabytes in the process.
 */
const RAW_PAIRS_MAX = 200_000

/** Without `from`, the window is the six weeks before `to` (behaviour.md §7). */
export const DEFAULT_WINDOW_MS = 6 * 7 * 24 * 3600 * 1000
const HOUR_MS = 3_600_000
const HOUR = { interval: '1 hour', origin: '1970-01-01T00:00:00.000Z' }

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
export async function readingsHistory (ctx: HistoryContext & { stream?: undefined }, deviceId: number, params: HistoryParams, access?: Promise<unknown>): Promise<HistoryResult>
export async function readingsHistory (ctx: HistoryContext, deviceId: number, params: HistoryParams, access?: Promise<unknown>): Promise<HistoryResult | StreamedHistory>
export async function readingsHistory (ctx: HistoryContext, deviceId: number, params: HistoryParams, access: Promise<unknown> = Promise.resolve()): Promise<HistoryResult | StreamedHistory> {
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
  const to = parseToParam(params.to) ?? ctx.now()
  const from = parseTimeParam('from', params.from) ?? new Date(to.getTime() - DEFAULT_WINDOW_MS)
  if (from > to) throw errors.badRequest('from must not be after to', { from: ['is after to'] })
  return { rollup, fn, from, to }
}

async function answerHistory (ctx: HistoryContext, deviceId: number, params: HistoryParams): Promise<HistoryResult | StreamedHistory> {
  const { rollup, fn, from, to } = historyRequest(ctx, params, (params.sensor_id ?? '') === '' && (params.sensor_key ?? '') === '', 'sensor_key OR sensor_id')
  const limit = parseLimitParam(params.limit)
  const runner = ctx.runner
  const askedId = parseSensorIdParam(params.sensor_id)
  const sensor = resolveSensor(runner, deviceId, askedId, askedId !== null ? null : (params.sensor_key ?? '').trim())
  // Buckets of a given id are read beside its resolution, which must still find it: a missing
  // sensor is a 404, whatever the buckets gave.
  const buckets = (async (): Promise<Buckets | Streamed> => {
    const sensorId = askedId ?? (await sensor).id
    const base = { deviceId, sensorId }
    const readTo = limit === null ? to : await limitedTo(ctx, { ...base, from, to, limit })
    const window = await boundedWindow(ctx, rollup, from, to, params, deviceId, [sensorId], { readTo, chunked: true })
    const chunks = window.chunks
    if (chunks !== undefined) {
      const runs = readRuns(ctx, rollup, fn, params, base, window)
      return chunks.streamed ? { streamed: runs } : await gathered(runs)
    }
    if (rollup.raw && ctx.stream !== undefined) return await rawOrStreamed(ctx, rollup, fn, params, base, window, ctx.stream)
    return await readBuckets(ctx, rollup, fn, from, to, params, base, window)
  })()
  const [resolved, read] = await inOrderOfPrecedence(sensor, buckets)
  const head = {
    device_id: deviceId,
    sensor_id: resolved.id,
    sensor_key: resolved.key,
    component_id: resolved.component_id,
    rollup: rollup.text,
    function: fn,
    from: formatTimestamp(from),
    to: formatTimestamp(to)
  }
  if ('streamed' in read) return { ...head, streamed: read.streamed }
  return { ...head, sample_size: read.sampleSize, readings: read.readings }
}

export interface Buckets { readings: RollupSeries, sampleSize: number }
interface Streamed { streamed: AsyncIterable<Buckets> }

/** A chunked window's runs of buckets (chunksOf), newest first, each read as the one before is taken, a turn of the event loop between them. */
async function * readRuns (ctx: HistoryContext, rollup: Rollup, fn: RollupFunction, params: HistoryParams, base: { deviceId: number, sensorId: number }, window: ReadWindow): AsyncGenerator<Buckets> {
  for await (const chunk of chunksOf(ctx, rollup, window, base)) {
    const to = new Date(chunk.until.getTime() - 1)
    const run: ReadWindow = { from: chunk.from, to, empty: false, perSeries: countBuckets(chunk.from, to, rollup) }
    yield await readBuckets(ctx, rollup, fn, chunk.from, to, params, base, run)
    await nextTurn()
  }
}

/** Runs of buckets as one answer: what they hold is at most maxBuckets buckets. */
async function gathered (runs: AsyncIterable<Buckets>): Promise<Buckets> {
  const series: RollupSeries[] = []
  let sampleSize = 0
  for await (const run of runs) {
    series.push(run.readings)
    sampleSize += run.sampleSize
  }
  return { readings: RollupSeries.concat(series), sampleSize }
}

/** Raw readings newest first, with a count of 1 each when asked for: [time, value] pairs of the answer. */
function rawBuckets (pairs: Float64Array, fn: RollupFunction, coverage: boolean): Buckets {
  const count = pairs.length / 2
  const starts = new Float64Array(count)
  const values = new Float64Array(count)
  for (let i = 0, at = pairs.length - 2; i < count; i++, at -= 2) {
    const time = pairs[at] as number
    starts[i] = time
    values[i] = finalize(stateOf(time, pairs[at + 1] as number), fn) ?? NaN
  }
  // A null value is still a reading: the count counts rows, as sample_size does.
  return { readings: new RollupSeries(starts, values, coverage ? new Float64Array(count).fill(1) : undefined), sampleSize: count }
}

/**
 * One sensor's raw readings, as readBuckets reads them; more than the window's share of them are
 * streamed, maxBuckets readings at a time from the newest (each run ends where the one before
 * began: a sensor has one reading a time), counted before from the hourly tier's counts and
 * bounded by `stream.maxBuckets`.
 */
async function rawOrStreamed (ctx: HistoryContext, rollup: Rollup, fn: RollupFunction, params: HistoryParams, base: { deviceId: number, sensorId: number }, window: ReadWindow, stream: StreamOptions): Promise<Buckets | Streamed> {
  const coverage = params.coverage === 'true' || params.coverage === '1'
  const until = new Date(window.to.getTime() + 1)
  const pairs = await rawPairs(ctx.runner, { ...base, from: window.from, until, limit: window.perSeries + 1 })
  if (pairs.length / 2 <= window.perSeries) {
    await ctx.charge?.(pairs.length / 2)
    return rawBuckets(pairs, fn, coverage)
  }
  // Every reading is a point: the hourly tier's counts, whole.
  const days = await bucketsPerDay(ctx.runner, { ...base, from: window.from, until, perHour: Number.MAX_SAFE_INTEGER })
  let held = 0
  for (let i = 1; i < days.length; i += 2) held += days[i] as number
  const estimate = Math.max(window.perSeries + 1, held)
  if (estimate > stream.maxBuckets) throw tooManyStreamed(estimate, rollup.text, stream.maxBuckets)
  await ctx.charge?.(estimate)
  const runs = async function * (): AsyncGenerator<Buckets> {
    for (let end = until; ;) {
      const run = await rawPairs(ctx.runner, { ...base, from: window.from, until: end, limit: ctx.maxBuckets, newest: true })
      if (run.length > 0) yield rawBuckets(run, fn, coverage)
      if (run.length / 2 < ctx.maxBuckets) return
      end = new Date(run[0] as number)
      await nextTurn()
    }
  }
  return { streamed: runs() }
}

/**
 * One series' buckets over `window`. With all_intervals, every bucket of [from, to], worked out
 * once for every series of `shared` (the request's window, when `limit` ends this one's sooner).
 */
export async function readBuckets (ctx: HistoryContext, rollup: Rollup, fn: RollupFunction, from: Date, to: Date, params: HistoryParams, base: { deviceId: number, sensorId: number }, window: ReadWindow, shared: ReadWindow = window): Promise<Buckets> {
  const runner = ctx.runner
  const allIntervals = asksAllIntervals(rollup, params)
  const coverage = params.coverage === 'true' || params.coverage === '1'
  if (window.empty) {
    const none = new Float64Array(0)
    if (allIntervals) return await everyInterval(ctx, rollup, from, to, shared, coverage, { starts: none, values: none, counts: none, buckets: 0, sampleSize: 0 })
    return { readings: new RollupSeries(none, none, coverage ? none : undefined), sampleSize: 0 }
  }
  const readFrom = window.from
  const until = new Date(window.to.getTime() + 1)

  if (rollup.raw) {
    // Packed pairs, as the fine rollups read them: as rows, each reading's Date and object cost
    // the loop 25 ms a sensor-year. Over the limit is a 400, so which readings fill it is moot.
    const pairs = await rawPairs(runner, { ...base, from: readFrom, until, limit: window.perSeries + 1 })
    const count = pairs.length / 2
    if (count > window.perSeries) throw tooManyBuckets(count, rollup.text, window.perSeries)
    await ctx.charge?.(count)
    // In time order from rawPairs; the answer is newest first.
    return rawBuckets(pairs, fn, coverage)
  }

  const plan = await readPlan(ctx, rollup, window)
  const parts = await Promise.all(plan.planned.map(async (segment) => await readPart(ctx, rollup, fn, base, segment, plan)))
  const keyOf = plan.keyOf
  const { starts, values, counts, buckets, sampleSize } = foldParts(parts, keyOf, fn, coverage)

  if (allIntervals) return await everyInterval(ctx, rollup, from, to, shared, coverage, { starts, values, counts, buckets, sampleSize })
  const newestFirst = (column: Float64Array): Float64Array => column.subarray(0, buckets).reverse()
  return { readings: new RollupSeries(newestFirst(starts), newestFirst(values), coverage ? newestFirst(counts) : undefined), sampleSize }
}

/** How a window's pieces are read: the plan, how raw rows are binned in SQL, and the buckets' keys. */
export interface ReadPlan { planned: Plan['parts'], bin: { interval: string, origin: string }, binned: boolean, keyOf: (bucket: number) => number }

/** The read plan of a window (the same for every series of it: planOf keeps it). */
export async function readPlan (ctx: HistoryContext, rollup: Rollup, window: ReadWindow): Promise<ReadPlan> {
  // On a zone's wall clock, SQL groups by the longest step its offsets align with (an hour in most
  // of the world), and the buckets are found here; in UTC it bins by the rollup itself.
  const { zoneAlignment, parts: planned } = await planOf(ctx, rollup, window)
  const sqlBins = zoneAlignment === undefined ? rollupSql(rollup) : null
  const bin = sqlBins?.kind === 'bin'
    ? { interval: sqlBins.interval, origin: sqlBins.origin }
    : zoneAlignment === undefined || zoneAlignment % HOUR_MS === 0 ? HOUR : { interval: `${zoneAlignment} milliseconds`, origin: HOUR.origin }
  // Raw rows binned in SQL by the rollup itself are already keyed by their bucket.
  return { planned, bin, binned: sqlBins?.kind === 'bin', keyOf: bucketKeyer(rollup) }
}

/** One piece of a plan read for one series. */
export async function readPart (ctx: HistoryContext, rollup: Rollup, fn: RollupFunction, base: { deviceId: number, sensorId: number }, segment: Plan['parts'][number], plan: Pick<ReadPlan, 'bin' | 'binned'>): Promise<ReadPart> {
  const runner = ctx.runner
  if ('pieces' in segment) {
    // On a zone's clock, PostgreSQL merges the tiers' rows into the buckets, given their bounds:
    // a run of tier pieces (days of several offsets, hours between them) in one statement.
    return { rows: await tierStatesIn(runner, segment.pieces, { ...base, fn, bounds: segment.bounds, boundsText: segment.boundsText }), binned: true }
  }
  const q = { ...base, from: segment.from, until: segment.until }
  // A zone's whole days come from its offsets' daily tiers where the deployment keeps them.
  if (segment.source !== 'raw') return { rows: await tierStates(runner, segment.source, { ...q, fn }), binned: false }
  // Folded here, from the rows packed as pairs: PostgreSQL's grouping of them (a hash table,
  // and an array a bucket for first and last) cost it more than reading them; too dense a
  // piece is grouped there all the same.
  const max = ctx.rawPairsMax ?? RAW_PAIRS_MAX
  const pairs = await rawPairs(runner, { ...q, limit: max + 1 })
  if (pairs.length <= 2 * max) return { rows: foldPairs(pairs, rollup), binned: true }
  return { rows: await rawStates(runner, { ...q, ...plan.bin, fn }), binned: plan.binned }
}

/** States read for a series: in bucket order, each already keyed by its bucket (binned) or a tier's. */
export interface ReadPart { rows: BucketStates, binned: boolean }

/**
 * Parts' states (in time order, each one's rows ascending) merged per bucket and finalized: the
 * buckets ascending, with their values, counts and the readings they hold.
 */
export function foldParts (parts: readonly ReadPart[], keyOf: (bucket: number) => number, fn: RollupFunction, coverage: boolean): FoldedBuckets {
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
  return { starts, values, counts, buckets, sampleSize }
}

const everyStart = new WeakMap<ReadWindow, Promise<number[]>>()

export interface FoldedBuckets { starts: Float64Array, values: Float64Array, counts: Float64Array, buckets: number, sampleSize: number }

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
