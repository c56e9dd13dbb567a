import { pgDate, pgDateOrNull, type Runner, type Tier } from './engine.js'
import type { AggregateState } from './states.js'
import { COPY_BINARY_HEADER, timestampMsAt } from '../copy-binary.js'

/**
 * Per-bucket mergeable state as the query layer reads it from raw rows or a tier, with its
 * bucket's start (epoch ms). A part the asked function does not need is not read at all, and
 * holds what merges as nothing: 0 for the sums and extremes (finalize reads only its own part),
 * no first (+Infinity) or last (-Infinity) time.
 */
export interface BucketState extends AggregateState { bucket: number }

export interface StateQuery {
  deviceId: number
  sensorId: number
  from: Date
  /** exclusive */
  until: Date
}

/** The float8 expressions of each part of a state, for one source (a tier's columns or raw aggregates). */
interface StateSql { count: string, meanM2: [string, string], sum: string, min: string, max: string, first: [string, string], last: [string, string] }

type Part = 'meanM2' | 'sum' | 'min' | 'max' | 'first' | 'last'
const PART_FNS: Record<Part, string[]> = { meanM2: ['dev'], sum: ['avg', 'sum'], min: ['min'], max: ['max'], first: ['first'], last: ['last'] }
const PARTS = Object.keys(PART_FNS) as Part[]

/** The parts `fn` needs (every part, when none is given), in the order they are packed. */
const partsFor = (fn: string | undefined): Part[] => PARTS.filter((part) => fn === undefined || PART_FNS[part].includes(fn))

/**
 * A state's parts packed as float8 bytes, one run per bucket, in one bytea: tens of thousands of
 * numbers came back as text, and postgres.js parsing them (a string per field, then a float) was a
 * third of a fine rollup's time. A SQL NULL (a bucket of null values) travels as NaN, which no
 * stored reading can be (posted values are finite).
 */
const packed = (expressions: readonly string[]): string => expressions.map((e) => `float8send(coalesce(${e}, 'NaN'))`).join(' || ')

/** The count and the `parts` of a state from `sql`, in the order unpack reads them. */
const stateExpressions = (sql: StateSql, parts: Part[]): string[] => [sql.count, ...parts.flatMap((part) => sql[part])]

/** What a NaN (a SQL NULL) of a packed part stands for. */
const or = (value: number, otherwise: number): number => Number.isNaN(value) ? otherwise : value

/**
 * Unpacks the bytes `packed` made of a bucket and the state of `parts` into states. No closure is
 * made per row: a fine rollup unpacks thousands.
 */
function unpack (data: Uint8Array | null | undefined, parts: Part[]): BucketState[] {
  if (data === null || data === undefined) return []
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  const has = (part: Part): boolean => parts.includes(part)
  const [meanM2, sum, min, max, first, last] = [has('meanM2'), has('sum'), has('min'), has('max'), has('first'), has('last')]
  const width = 8 * (2 + (meanM2 ? 2 : 0) + (sum ? 1 : 0) + (min ? 1 : 0) + (max ? 1 : 0) + (first ? 2 : 0) + (last ? 2 : 0))
  const states: BucketState[] = []
  for (let at = 0; at + width <= data.byteLength; at += width) {
    const state: BucketState = { bucket: view.getFloat64(at), count: view.getFloat64(at + 8), mean: 0, m2: 0, sum: 0, min: 0, max: 0, firstAt: Infinity, first: NaN, lastAt: -Infinity, last: NaN }
    let o = at + 16
    if (meanM2) { state.mean = or(view.getFloat64(o), 0); state.m2 = or(view.getFloat64(o + 8), 0); o += 16 }
    if (sum) { state.sum = or(view.getFloat64(o), 0); o += 8 }
    if (min) { state.min = or(view.getFloat64(o), 0); o += 8 }
    if (max) { state.max = or(view.getFloat64(o), 0); o += 8 }
    if (first) { state.firstAt = or(view.getFloat64(o), Infinity); state.first = view.getFloat64(o + 8); o += 16 }
    if (last) { state.lastAt = or(view.getFloat64(o), -Infinity); state.last = view.getFloat64(o + 8) }
    states.push(state)
  }
  return states
}

const TIER_SQL: StateSql = {
  count: 'count::float8',
  meanM2: ['mean', 'm2'],
  sum: 'sum',
  min: 'min',
  max: 'max',
  first: ['(extract(epoch from first_at) * 1000)::float8', 'first_val'],
  last: ['(extract(epoch from last_at) * 1000)::float8', 'last_val']
}

/** var_pop is PostgreSQL's numerically stable (Youngs-Cramer) variance. */
const RAW_SQL: StateSql = {
  count: 'count(value)::float8',
  meanM2: ['avg(value)', 'coalesce(var_pop(value) * count(value), 0)'],
  sum: 'sum(value)',
  min: 'min(value)',
  max: 'max(value)',
  first: ['(extract(epoch from min(recorded_at)) * 1000)::float8', '(array_agg(value order by recorded_at))[1]'],
  last: ['(extract(epoch from max(recorded_at)) * 1000)::float8', '(array_agg(value order by recorded_at desc))[1]']
}

/** Stored tier states in [from, until), ascending: the planner only asks for tier-aligned ranges. */
export async function tierStates (runner: Runner, tier: Tier, q: StateQuery & { fn?: string }): Promise<BucketState[]> {
  const parts = partsFor(q.fn)
  const [row] = await runner.query<{ states: Uint8Array | null }>(`
    select string_agg(${packed(['(extract(epoch from tier.bucket) * 1000)::float8', ...stateExpressions(TIER_SQL, parts)])}, ''::bytea order by tier.bucket) as states
    from ${tier.table} as tier
    where device_id = $1 and sensor_id = $2 and tier.bucket >= $3 and tier.bucket < $4`, [q.deviceId, q.sensorId, q.from, q.until])
  return unpack(row?.states, parts)
}

/** States computed from raw rows, grouped by `date_bin(interval, recorded_at, origin)`, in bucket order. */
export async function rawStates (runner: Runner, q: StateQuery & { interval: string, origin: string, fn: string }): Promise<BucketState[]> {
  const parts = partsFor(q.fn)
  const columns = stateExpressions(RAW_SQL, parts)
  const names = columns.map((_, i) => `c${i}`)
  // Grouped by the timestamp itself; only the result rows become epoch numbers (extract() is
  // numeric arithmetic, far too slow to run once per raw row).
  const [row] = await runner.query<{ states: Uint8Array | null }>(`
    select string_agg(${packed(['(extract(epoch from s.bucket_at) * 1000)::float8', ...names])}, ''::bytea order by s.bucket_at) as states
    from (
      select date_bin($5::interval, recorded_at, $6::timestamptz) as bucket_at, ${columns.map((c, i) => `${c} as ${names[i] ?? ''}`).join(', ')}
      from readings
      where device_id = $1 and sensor_id = $2 and recorded_at >= $3 and recorded_at < $4
      group by 1
    ) as s`, [q.deviceId, q.sensorId, q.from, q.until, q.interval, q.origin])
  return unpack(row?.states, parts)
}

/**
 * The raw readings of [from, until) as (epoch ms, value) pairs in time order; a NULL value is NaN.
 * The first and last of a fine rollup are folded from these by the caller: grouped in SQL they
 * cost an array per bucket (first and last have no aggregate of their own), twice what reading the
 * rows costs. The rows come as a binary COPY: tens of thousands of them as text, or packed in one
 * bytea, were megabytes of strings to parse, and the garbage showed in the slowest requests.
 */
export async function rawPairs (runner: Runner, q: StateQuery): Promise<Float64Array> {
  // COPY takes no parameters: the query's only values are integers and ISO times made here.
  const chunks = await runner.copyOutBinary(`
    select recorded_at, value from readings
    where device_id = ${integer(q.deviceId)} and sensor_id = ${integer(q.sensorId)}
      and recorded_at >= '${q.from.toISOString()}' and recorded_at < '${q.until.toISOString()}'
    order by recorded_at`)
  const data = chunks.length === 1 ? chunks[0] as Uint8Array : Buffer.concat(chunks)
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  if (data.byteLength < COPY_BINARY_HEADER.length) return new Float64Array(0)
  const first = COPY_BINARY_HEADER.length + view.getUint32(COPY_BINARY_HEADER.length - 4)
  // A row: a field count (2 bytes); the time's length (4) and int64 microseconds since 2000 (8);
  // the value's length (4, -1 for NULL) and float8 (8).
  let rows = 0
  for (let at = first; at + 2 <= data.byteLength && view.getInt16(at) !== -1; at += 18 + Math.max(0, view.getInt32(at + 14))) rows++
  const pairs = new Float64Array(rows * 2)
  for (let i = 0, at = first; i < pairs.length; i += 2) {
    const length = view.getInt32(at + 14)
    pairs[i] = timestampMsAt(view, at + 6)
    pairs[i + 1] = length === -1 ? NaN : view.getFloat64(at + 18)
    at += 18 + Math.max(0, length)
  }
  return pairs
}

function integer (n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`)
  return String(n)
}

/** Raw points for the raw rollup (each reading its own bucket), at most `limit`. */
export async function rawPoints (runner: Runner, q: StateQuery & { limit: number }): Promise<{ recorded_at: Date, value: number }[]> {
  const rows = await runner.query<{ recorded_at: unknown, value: number }>(`
    select recorded_at, value from readings
    where device_id = $1 and sensor_id = $2 and recorded_at >= $3 and recorded_at < $4
    order by recorded_at desc limit $5`, [q.deviceId, q.sensorId, q.from, q.until, q.limit])
  return rows.map((r) => ({ recorded_at: pgDate(r.recorded_at), value: r.value }))
}

/** First and last reading time of a device's sensor: the span a request is clamped to. */
export async function readingSpan (runner: Runner, deviceId: number, sensorId: number): Promise<{ first: Date | null, last: Date | null }> {
  const [row] = await runner.query<{ first: unknown, last: unknown }>(`
    select (select min(recorded_at) from readings where device_id = $1 and sensor_id = $2) as first,
           (select max(recorded_at) from readings where device_id = $1 and sensor_id = $2) as last`, [deviceId, sensorId])
  return { first: pgDateOrNull(row?.first), last: pgDateOrNull(row?.last) }
}
