import { pgArrayLiteral, pgDateOrNull, type Runner, type Tier } from './engine.js'
import { type AggregateState, stateOf } from './states.js'
import { COPY_BINARY_HEADER, timestampMsAt } from '../copy-binary.js'

/**
 * Per-bucket mergeable state as the query layer reads it from raw rows or a tier, with its
 * bucket's start (epoch ms). A part the asked function does not need is not read at all, and
 * holds what merges as nothing: 0 for the sums and extremes (finalize reads only its own part),
 * no first (+Infinity) or last (-Infinity) time.
 */
export interface BucketState extends AggregateState { bucket: number }

/** Where each number of a state sits in a run of BucketStates. */
const FIELD = { bucket: 0, count: 1, mean: 2, m2: 3, sum: 4, min: 5, max: 6, firstAt: 7, first: 8, lastAt: 9, last: 10 } as const
const FIELDS = Object.keys(FIELD).length

/**
 * Bucket states in time order, a run of numbers a bucket in one Float64Array: a fine rollup reads
 * thousands, and an object each (eleven boxed numbers) was a third of such a request's garbage.
 */
export class BucketStates {
  private data: Float64Array
  private size = 0

  constructor (capacity = 0) { this.data = new Float64Array(Math.max(1, capacity) * FIELDS) }

  get length (): number { return this.size }

  /** Appends a bucket holding nothing yet (see BucketState); returns its index. */
  add (bucket: number): number {
    if ((this.size + 1) * FIELDS > this.data.length) {
      const grown = new Float64Array(this.data.length * 2)
      grown.set(this.data)
      this.data = grown
    }
    const at = this.size * FIELDS
    this.data.fill(0, at, at + FIELDS)
    this.data[at + FIELD.bucket] = bucket
    this.data[at + FIELD.firstAt] = Infinity
    this.data[at + FIELD.first] = NaN
    this.data[at + FIELD.lastAt] = -Infinity
    this.data[at + FIELD.last] = NaN
    return this.size++
  }

  bucket (i: number): number { return this.data[i * FIELDS + FIELD.bucket] as number }
  setBucket (i: number, bucket: number): void { this.data[i * FIELDS + FIELD.bucket] = bucket }
  count (i: number): number { return this.data[i * FIELDS + FIELD.count] as number }

  /** Copies bucket `i`'s state into `into` (no object is made), and returns it. */
  read (i: number, into: AggregateState): AggregateState {
    const d = this.data
    const at = i * FIELDS
    into.count = d[at + FIELD.count] as number
    into.mean = d[at + FIELD.mean] as number
    into.m2 = d[at + FIELD.m2] as number
    into.sum = d[at + FIELD.sum] as number
    into.min = d[at + FIELD.min] as number
    into.max = d[at + FIELD.max] as number
    into.firstAt = d[at + FIELD.firstAt] as number
    into.first = d[at + FIELD.first] as number
    into.lastAt = d[at + FIELD.lastAt] as number
    into.last = d[at + FIELD.last] as number
    return into
  }

  /** Sets bucket `i`'s state. */
  write (i: number, state: AggregateState): void {
    const d = this.data
    const at = i * FIELDS
    d[at + FIELD.count] = state.count
    d[at + FIELD.mean] = state.mean
    d[at + FIELD.m2] = state.m2
    d[at + FIELD.sum] = state.sum
    d[at + FIELD.min] = state.min
    d[at + FIELD.max] = state.max
    d[at + FIELD.firstAt] = state.firstAt
    d[at + FIELD.first] = state.first
    d[at + FIELD.lastAt] = state.lastAt
    d[at + FIELD.last] = state.last
  }

  /** The states as objects, for the few callers that want them so. */
  toArray (): BucketState[] {
    return Array.from({ length: this.size }, (_, i) => ({ bucket: this.bucket(i), ...this.read(i, stateOf(0, 0)) }))
  }

  /**
   * The states of `packed` bytes: runs of float8 numbers, a bucket's start then its `fields`. A NaN
   * is a SQL NULL, and leaves its field holding what merges as nothing, as `add` set it (a first or
   * last value stays NaN, its time telling it is none).
   */
  static unpacked (bytes: Uint8Array | null | undefined, fields: readonly number[]): BucketStates {
    const width = 8 * (1 + fields.length)
    const states = new BucketStates(bytes === null || bytes === undefined ? 0 : Math.floor(bytes.byteLength / width))
    if (bytes === null || bytes === undefined) return states
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    for (let at = 0; at + width <= bytes.byteLength; at += width) {
      const row = states.add(view.getFloat64(at)) * FIELDS
      for (let f = 0; f < fields.length; f++) {
        const value = view.getFloat64(at + 8 + 8 * f)
        if (!Number.isNaN(value)) states.data[row + (fields[f] as number)] = value
      }
    }
    return states
  }
}

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

/** The fields each part fills, in the order `packed` writes them. */
const PART_FIELDS: Record<Part, number[]> = { meanM2: [FIELD.mean, FIELD.m2], sum: [FIELD.sum], min: [FIELD.min], max: [FIELD.max], first: [FIELD.firstAt, FIELD.first], last: [FIELD.lastAt, FIELD.last] }

/** Unpacks the bytes `packed` made of a bucket and the state of `parts`. */
const unpack = (data: Uint8Array | null | undefined, parts: Part[]): BucketStates =>
  BucketStates.unpacked(data, [FIELD.count, ...parts.flatMap((part) => PART_FIELDS[part])])

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

/** A shifted daily tier's rows are those of its offset (an integer, part of the statement's text). */
const ofTier = (tier: Tier): string => tier.offsetMinutes === undefined ? '' : `offset_minutes = ${Math.trunc(tier.offsetMinutes)} and `

/** Stored tier states in [from, until), ascending: the planner only asks for tier-aligned ranges. */
export async function tierStates (runner: Runner, tier: Tier, q: StateQuery & { fn?: string }): Promise<BucketStates> {
  const parts = partsFor(q.fn)
  const [row] = await runner.query<{ states: Uint8Array | null }>(`
    select string_agg(${packed(['(extract(epoch from tier.bucket) * 1000)::float8', ...stateExpressions(TIER_SQL, parts)])}, ''::bytea order by tier.bucket) as states
    from ${tier.table} as tier
    where ${ofTier(tier)}device_id = $1 and sensor_id = $2 and tier.bucket >= $3 and tier.bucket < $4`, [q.deviceId, q.sensorId, q.from, q.until])
  return unpack(row?.states, parts)
}

/** A tier's states merged per group of rows: the sums summed, the extremes of the extremes, the first of the firsts. */
const GROUPED_TIER_SQL: StateSql = {
  count: 'sum(count)::float8',
  // Chan's formula over the group: the M2s plus each row's squared distance to the group's mean.
  meanM2: ['sum(count * mean) / nullif(sum(count), 0)', 'sum(m2 + count * (mean - group_mean) * (mean - group_mean))'],
  sum: 'sum(sum)',
  min: 'min(min)',
  max: 'max(max)',
  first: ['(extract(epoch from min(first_at)) * 1000)::float8', '(array_agg(first_val order by first_at nulls last))[1]'],
  last: ['(extract(epoch from max(last_at)) * 1000)::float8', '(array_agg(last_val order by last_at desc nulls last))[1]']
}

/** A piece of a range and the tier that serves it. */
export interface TierPiece { tier: Tier, from: Date, until: Date }

const TIER_COLUMNS = 'bucket, count, mean, m2, sum, min, max, first_at, first_val, last_at, last_val'

/** The bounds of tierStatesIn as the text of its array parameter: made once for several series. */
export const tierBoundsText = (bounds: readonly number[]): string => pgArrayLiteral(bounds.map((ms) => new Date(ms)))

/**
 * Tiers' states merged in PostgreSQL into the buckets between `bounds` (ascending instants: each
 * bucket's start, then the last one's end), in bucket order, each state's bucket its start. For
 * buckets the tiers' do not fit as whole numbers (a time zone's days from UTC hours): a year of
 * local days comes back as 366 states rather than 8,760, and no row's time is converted. The
 * pieces (a zone's runs of days from its offsets' daily tiers, the days its clocks change on from
 * hours) are read in one statement, each piece an index range of its tier: one round trip.
 */
export async function tierStatesIn (runner: Runner, pieces: readonly TierPiece[], q: { deviceId: number, sensorId: number, fn?: string, bounds: readonly number[], boundsText?: string }): Promise<BucketStates> {
  const parts = partsFor(q.fn)
  if (pieces.length === 0) return unpack(null, parts)
  const columns = stateExpressions(GROUPED_TIER_SQL, parts)
  const names = columns.map((_, i) => `c${i}`)
  const groupMean = parts.includes('meanM2')
    ? ', sum(tier.count * tier.mean) over (partition by width_bucket(tier.bucket, $3::timestamptz[])) / nullif(sum(tier.count) over (partition by width_bucket(tier.bucket, $3::timestamptz[])), 0) as group_mean'
    : ''
  const rows = pieces.map(({ tier }, i) =>
    `(select ${TIER_COLUMNS} from ${tier.table} where ${ofTier(tier)}device_id = $1 and sensor_id = $2 and bucket >= $${4 + 2 * i} and bucket < $${5 + 2 * i})`)
  const [row] = await runner.query<{ states: Uint8Array | null }>(`
    select string_agg(${packed(['s.b::float8', ...names])}, ''::bytea order by s.b) as states
    from (
      select grouped.b, ${columns.map((e, i) => `${e} as ${names[i] ?? ''}`).join(', ')}
      from (
        select width_bucket(tier.bucket, $3::timestamptz[]) as b, tier.*${groupMean}
        from (${rows.join(' union all ')}) as tier
      ) as grouped
      group by grouped.b
    ) as s`, [q.deviceId, q.sensorId, q.boundsText ?? tierBoundsText(q.bounds), ...pieces.flatMap((piece) => [piece.from, piece.until])])
  // Each state's bucket is its group's index (1 for the first bucket): its start is that bound.
  const states = unpack(row?.states, parts)
  for (let i = 0; i < states.length; i++) states.setBucket(i, q.bounds[states.bucket(i) - 1] as number)
  return states
}

/** States computed from raw rows, grouped by `date_bin(interval, recorded_at, origin)`, in bucket order. */
export async function rawStates (runner: Runner, q: StateQuery & { interval: string, origin: string, fn: string }): Promise<BucketStates> {
  const parts = partsFor(q.fn)
  const columns = stateExpressions(RAW_SQL, parts)
  const names = columns.map((_, i) => `c${i}`)
  // Grouped by the timestamp itself; only the result rows become epoch numbers (extract() is
  // numeric arithmetic, far too slow to run once per raw row).
  const states = await copyOutBytes(runner, `
    select string_agg(${packed(['(extract(epoch from s.bucket_at) * 1000)::float8', ...names])}, ''::bytea order by s.bucket_at)
    from (
      select date_bin(${quoted(q.interval)}::interval, recorded_at, ${quoted(q.origin)}::timestamptz) as bucket_at, ${columns.map((c, i) => `${c} as ${names[i] ?? ''}`).join(', ')}
      from readings
      where device_id = ${integer(q.deviceId)} and sensor_id = ${integer(q.sensorId)} and recorded_at >= ${quoted(q.from.toISOString())} and recorded_at < ${quoted(q.until.toISOString())}
      group by 1
    ) as s`)
  return unpack(states, parts)
}

/**
 * The raw readings of [from, until) as (epoch ms, value) pairs in time order, at most `limit` of
 * them (the first ones, or with `newest` the last ones); a NULL value is NaN. The first and last
 * of a fine rollup are folded from these by the caller: grouped in SQL they cost an array per
 * bucket (first and last have no aggregate of their own), twice what reading the rows costs. The pairs come packed in one bytea
 * (16 bytes a reading) through a binary COPY: as COPY rows, each was a message for postgres.js to
 * take apart, and as a query's bytea, megabytes of hex text.
 */
export async function rawPairs (runner: Runner, q: StateQuery & { limit: number, newest?: boolean }): Promise<Float64Array> {
  const data = await copyOutBytes(runner, `
    select string_agg(timestamptz_send(recorded_at) || float8send(coalesce(value, 'NaN')), ''::bytea order by recorded_at)
    from (
      select recorded_at, value from readings
      where device_id = ${integer(q.deviceId)} and sensor_id = ${integer(q.sensorId)}
        and recorded_at >= ${quoted(q.from.toISOString())} and recorded_at < ${quoted(q.until.toISOString())}
      order by recorded_at${q.newest === true ? ' desc' : ''}
      limit ${integer(q.limit)}
    ) as r`)
  if (data === null) return new Float64Array(0)
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  // A pair: int64 microseconds since 2000 and a float8.
  const pairs = new Float64Array(Math.floor(data.byteLength / 16) * 2)
  for (let i = 0, at = 0; i < pairs.length; i += 2, at += 16) {
    pairs[i] = timestampMsAt(view, at)
    pairs[i + 1] = view.getFloat64(at + 8)
  }
  return pairs
}

/**
 * The one bytea a query answers, as its bytes: through a binary COPY (which takes no parameters),
 * since a bytea in a query's answer comes as hex text, twice its size, to parse.
 */
async function copyOutBytes (runner: Runner, query: string): Promise<Uint8Array | null> {
  const chunks = await runner.copyOutBinary(query)
  const data = chunks.length === 1 ? chunks[0] as Uint8Array : Buffer.concat(chunks)
  if (data.byteLength < COPY_BINARY_HEADER.length) return null
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  // After the header: the row's field count (2 bytes), the field's length (4, -1 for NULL), its bytes.
  const at = COPY_BINARY_HEADER.length + view.getUint32(COPY_BINARY_HEADER.length - 4)
  if (data.byteLength < at + 6 || view.getInt16(at) !== 1) return null
  const length = view.getInt32(at + 2)
  return length < 0 ? null : data.subarray(at + 6, at + 6 + length)
}

/** COPY takes no parameters: its queries' only values are integers, and times and intervals made here. */
function integer (n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`)
  return String(n)
}

function quoted (text: string): string {
  if (!/^[\w :.+-]*$/.test(text)) throw new Error(`not a time or an interval: ${text}`)
  return `'${text}'`
}

/**
 * First and last reading time of any of a device's sensors: the extent a request is clamped to
 * before its buckets are counted. Two index probes a sensor, whatever the range asked for.
 */
export async function readingsExtent (runner: Runner, deviceId: number, sensorIds: readonly number[]): Promise<{ first: Date | null, last: Date | null }> {
  const [row] = await runner.query<{ first: unknown, last: unknown }>(`
    select min(e.first) as first, max(e.last) as last
    from unnest($2::int[]) as s(id),
    lateral (select (select min(recorded_at) from readings where device_id = $1 and sensor_id = s.id) as first,
                    (select max(recorded_at) from readings where device_id = $1 and sensor_id = s.id) as last) as e`, [deviceId, pgArrayLiteral(sensorIds)])
  return { first: pgDateOrNull(row?.first), last: pgDateOrNull(row?.last) }
}
