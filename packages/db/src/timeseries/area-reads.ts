import { COPY_BINARY_HEADER, timestampMsAt } from '../copy-binary.js'
import type { Runner, Tier } from './engine.js'
import { BucketStates } from './reads.js'
import { type AggregateState, stateOf } from './states.js'

/*
 * A tier read for many devices at once, for an area's statistics: a month of hours over a
 * thousand devices is 720,000 tier rows, and a statement a device cost a round trip each. Each
 * device's rows come back as arrays (a timestamptz[] and float8[]s), through a binary COPY:
 * building a bytea a row (float8send, ||) cost PostgreSQL twice what reading the rows did.
 */

/** A device's sensor to read. */
export interface DeviceSensor { deviceId: number, sensorId: number }

/** The tier columns each part of a state needs, by the function asked (avg needs count and sum only). */
const COLUMNS_FOR: Record<string, string[]> = {
  avg: ['sum'], sum: ['sum'], count: [], min: ['min'], max: ['max'], dev: ['mean', 'm2'], first: ['first_at', 'first_val'], last: ['last_at', 'last_val']
}
const TIME_COLUMNS = new Set(['first_at', 'last_at'])

/** COPY takes no parameters: its only values are integers and times made here. */
function integer (n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`)
  return String(n)
}

/** The pairs' device and sensor ids as two integer array literals, for an unnest with ordinality. */
const pairArrays = (pairs: readonly DeviceSensor[]): string =>
  `'{${pairs.map((p) => integer(p.deviceId)).join(',')}}'::int[], '{${pairs.map((p) => integer(p.sensorId)).join(',')}}'::int[]`

/**
 * The tier's states in [from, until) of each pair, in the pairs' order, each ascending by bucket.
 * One statement: a lateral index range scan of the tier a pair.
 */
export async function tierStatesOfDevices (runner: Runner, tier: Tier, pairs: readonly DeviceSensor[], range: { from: Date, until: Date, fn: string }): Promise<BucketStates[]> {
  const columns = COLUMNS_FOR[range.fn]
  if (columns === undefined) throw new Error(`no tier columns for ${range.fn}`)
  if (pairs.length === 0) return []
  const offset = tier.offsetMinutes === undefined ? '' : `t.offset_minutes = ${integer(tier.offsetMinutes)} and `
  const selected = ['count::float8 as count', ...columns.map((c) => TIME_COLUMNS.has(c) ? c : `${c}::float8 as ${c}`)]
  const arrays = ['bucket', 'count', ...columns].map((c) => `array_agg(r.${c})`)
  // Array literals of integers, then each pair's rows in bucket order (the key's order), aggregated
  // in that order.
  const query = `
    select p.i, a.*
    from unnest(${pairArrays(pairs)}) with ordinality as p(device_id, sensor_id, i)
    cross join lateral (
      select ${arrays.join(', ')}
      from (
        select t.bucket, ${selected.join(', ')} from ${tier.table} t
        where ${offset}t.device_id = p.device_id and t.sensor_id = p.sensor_id
          and t.bucket >= '${range.from.toISOString()}' and t.bucket < '${range.until.toISOString()}'
        order by t.bucket
      ) as r
    ) as a`
  return decodeRows(joined(await runner.copyOutBinary(query)), pairs.length, columns)
}

/**
 * Walks the rows of a binary COPY of (ordinality, array, array, ...): for each, the pair's index
 * (ordinality − 1), where each one-dimensional array's elements start (-1 for NULL or empty) and
 * how many it has (readElements reads them).
 */
function eachArrayRow (data: Uint8Array, arrays: number, each: (index: number, view: DataView, starts: readonly number[], elements: number) => void): void {
  if (data.byteLength < COPY_BINARY_HEADER.length) return
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  let at = COPY_BINARY_HEADER.length + view.getUint32(COPY_BINARY_HEADER.length - 4)
  const starts = new Array<number>(arrays).fill(-1)
  while (at + 2 <= data.byteLength) {
    if (view.getInt16(at) === -1) break
    at += 2
    const ordinalLength = view.getInt32(at)
    const index = Number(view.getBigInt64(at + 4)) - 1
    at += 4 + ordinalLength
    let elements = 0
    for (let f = 0; f < arrays; f++) {
      const length = view.getInt32(at)
      at += 4
      if (length < 0) { starts[f] = -1; continue }
      // ndim, has-nulls, element type, then (size, lower bound) of the one dimension
      const ndim = view.getInt32(at)
      elements = ndim === 0 ? 0 : view.getInt32(at + 12)
      starts[f] = ndim === 0 ? -1 : at + 20
      at += length
    }
    each(index, view, starts, elements)
  }
}

/**
 * The elements of a one-dimensional array starting at `at` into `out`: 8 bytes each (a time as
 * epoch ms), NaN for a NULL, which has a length of -1 and no bytes.
 */
function readElements (view: DataView, at: number, elements: number, out: Float64Array, time: boolean): Float64Array {
  for (let e = 0; e < elements; e++) {
    const length = view.getInt32(at)
    at += 4
    if (length < 0) { out[e] = NaN; continue }
    out[e] = time ? timestampMsAt(view, at) : view.getFloat64(at)
    at += length
  }
  return out
}

/** The bytes of a COPY, in one piece. */
const joined = (chunks: Uint8Array[]): Uint8Array => chunks.length === 1 ? chunks[0] as Uint8Array : Buffer.concat(chunks)

/** Reads the COPY rows (ordinality, bucket[], count[], column arrays) into states per pair. */
function decodeRows (data: Uint8Array, count: number, columns: readonly string[]): BucketStates[] {
  const out: BucketStates[] = Array.from({ length: count }, () => new BucketStates(0))
  const state: AggregateState = stateOf(0, 0)
  eachArrayRow(data, 2 + columns.length, (index, view, starts, elements) => {
    const states = new BucketStates(elements)
    out[index] = states
    if (elements === 0 || (starts[0] as number) < 0) return
    const read = (f: number, time: boolean): Float64Array => (starts[f] as number) < 0 ? new Float64Array(elements).fill(NaN) : readElements(view, starts[f] as number, elements, new Float64Array(elements), time)
    const buckets = read(0, true)
    const counts = read(1, false)
    const fields = columns.map((column, c) => read(2 + c, TIME_COLUMNS.has(column)))
    for (let e = 0; e < elements; e++) {
      const i = states.add(buckets[e] as number)
      states.read(i, state)
      state.count = counts[e] as number
      columns.forEach((column, c) => {
        const value = (fields[c] as Float64Array)[e] as number
        // A NULL part holds what merges as nothing, as `add` set it.
        if (Number.isNaN(value)) return
        if (column === 'first_at') state.firstAt = value
        else if (column === 'last_at') state.lastAt = value
        else if (column === 'sum') state.sum = value
        else if (column === 'min') state.min = value
        else if (column === 'max') state.max = value
        else if (column === 'mean') state.mean = value
        else if (column === 'm2') state.m2 = value
        else if (column === 'first_val') state.first = value
        else if (column === 'last_val') state.last = value
      })
      states.write(i, state)
    }
  })
  return out
}

/**
 * The raw readings of [from, until) of each pair as (epoch ms, value) pairs in time order (a NULL
 * value is NaN), at most `limit` of each: null for a pair with more, which its caller reads as the
 * history does. One statement: the short raw pieces of an area request (a second at the end of
 * a range, minutes at its start) cost a round trip each for a thousand devices.
 */
export async function rawPairsOfDevices (runner: Runner, pairs: readonly DeviceSensor[], range: { from: Date, until: Date, limit: number }): Promise<Array<Float64Array | null>> {
  if (pairs.length === 0) return []
  const query = `
    select p.i, a.*
    from unnest(${pairArrays(pairs)}) with ordinality as p(device_id, sensor_id, i)
    cross join lateral (
      select array_agg(r.recorded_at), array_agg(coalesce(r.value, 'NaN'))
      from (
        select recorded_at, value from readings
        where device_id = p.device_id and sensor_id = p.sensor_id
          and recorded_at >= '${range.from.toISOString()}' and recorded_at < '${range.until.toISOString()}'
        order by recorded_at
        limit ${integer(range.limit + 1)}
      ) as r
    ) as a`
  const out: Array<Float64Array | null> = Array.from({ length: pairs.length }, () => new Float64Array(0))
  eachArrayRow(joined(await runner.copyOutBinary(query)), 2, (index, view, starts, elements) => {
    if (elements > range.limit) { out[index] = null; return }
    if (elements === 0) return
    const times = readElements(view, starts[0] as number, elements, new Float64Array(elements), true)
    const values = readElements(view, starts[1] as number, elements, new Float64Array(elements), false)
    const read = new Float64Array(elements * 2)
    for (let e = 0; e < elements; e++) {
      read[2 * e] = times[e] as number
      read[2 * e + 1] = values[e] as number
    }
    out[index] = read
  })
  return out
}

/**
 * A tier row's value when the row is a whole window (a rollup of the tier's own bucket, e.g. 1h
 * from the hourly tier): what finalize gives for its state, in SQL's float8 arithmetic, which is
 * the same IEEE arithmetic. Rows without a value (count 0) are left out, as the fold skips them.
 */
const ROW_VALUE: Record<string, string> = {
  avg: 't.sum / t.count',
  sum: 't.sum',
  count: 't.count::float8',
  min: 't.min',
  max: 't.max',
  dev: 'case when t.count >= 2 then sqrt(t.m2 / (t.count - 1)) end',
  first: 't.first_val',
  last: 't.last_val'
}

/** Each pair's window starts (epoch ms, ascending) and values (NaN where none). */
export interface WindowValues { starts: Float64Array, values: Float64Array }

/**
 * The tier's rows in [from, until) of each pair (from its own `from`, when it has one) as finished window values, in the pairs' order:
 * for a rollup whose windows are the tier's own buckets, the value is computed with the row, and
 * two numbers a row come back rather than a state of up to eleven.
 */
export async function tierValuesOfDevices (runner: Runner, tier: Tier, pairs: ReadonlyArray<DeviceSensor & { from?: Date }>, range: { from: Date, until: Date, fn: string }): Promise<WindowValues[]> {
  const value = ROW_VALUE[range.fn]
  if (value === undefined) throw new Error(`no tier value for ${range.fn}`)
  const out: WindowValues[] = Array.from({ length: pairs.length }, () => ({ starts: new Float64Array(0), values: new Float64Array(0) }))
  if (pairs.length === 0) return out
  const offset = tier.offsetMinutes === undefined ? '' : `t.offset_minutes = ${integer(tier.offsetMinutes)} and `
  const query = `
    select p.i, a.*
    from unnest(${pairArrays(pairs)},
      '{${pairs.map((p) => (p.from ?? range.from).toISOString()).join(',')}}'::timestamptz[]) with ordinality as p(device_id, sensor_id, from_at, i)
    cross join lateral (
      select array_agg(r.bucket), array_agg(r.value)
      from (
        select t.bucket, (${value})::float8 as value from ${tier.table} t
        where ${offset}t.device_id = p.device_id and t.sensor_id = p.sensor_id
          and t.bucket >= p.from_at and t.bucket < '${range.until.toISOString()}' and t.count > 0
        order by t.bucket
      ) as r
    ) as a`
  eachArrayRow(joined(await runner.copyOutBinary(query)), 2, (index, view, starts, elements) => {
    if (elements === 0) return
    out[index] = {
      starts: readElements(view, starts[0] as number, elements, new Float64Array(elements), true),
      values: readElements(view, starts[1] as number, elements, new Float64Array(elements), false)
    }
  })
  return out
}
