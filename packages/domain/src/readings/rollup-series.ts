import { formatReadingTime } from '../time.js'
import { ascii, READING_TIME_BYTES, ReadingTimeBytes } from '../text-bytes.js'

/** `["`, a time, `Z",`, a number (at most 25 characters), `]` and a comma */
const TUPLE_BYTES = 2 + READING_TIME_BYTES + 3 + 25 + 2

/**
 * A rollup's buckets, newest first, as two columns of numbers: the bucket starts (epoch ms) and
 * their values, NaN where the value is null. A fine rollup answers thousands of buckets, and a
 * [time, value] tuple for each (an array, a string, a boxed number), then the serializer's
 * strings, were most of such a request's garbage: the response is written from the columns.
 */
export class RollupSeries {
  /**
   * `counts`, when asked for (`coverage=true`): the readings in each bucket, written as a third
   * member of each tuple, so that an average can be told from a complete one.
   */
  constructor (private readonly starts: Float64Array, private readonly values: Float64Array, private readonly counts?: Float64Array) {}

  get length (): number { return this.starts.length }

  /** Every bucket start of any of the series, newest first, each once. */
  static unionOfStarts (series: readonly RollupSeries[]): Float64Array {
    const all = new Float64Array(series.reduce((sum, s) => sum + s.starts.length, 0))
    let n = 0
    for (const s of series) { all.set(s.starts, n); n += s.starts.length }
    all.sort().reverse()
    let unique = 0
    for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[unique - 1]) all[unique++] = all[i] as number
    return all.subarray(0, unique)
  }

  /** This series on other bucket starts (newest first, holding all of its own): null and 0 where it has none. */
  alignedTo (starts: Float64Array): RollupSeries {
    if (starts.length === this.starts.length) return this
    const values = new Float64Array(starts.length).fill(NaN)
    const counts = this.counts === undefined ? undefined : new Float64Array(starts.length)
    for (let i = 0, j = 0; i < starts.length && j < this.starts.length; i++) {
      if (starts[i] !== this.starts[j]) continue
      values[i] = this.values[j] as number
      if (counts !== undefined) counts[i] = this.counts?.[j] as number
      j++
    }
    return new RollupSeries(starts, values, counts)
  }

  /** The contract's `[recorded_at, value]` pairs, with the count as a third member when asked for. */
  tuples (): ([string, number | null] | [string, number | null, number])[] {
    const counts = this.counts
    return Array.from(this.starts, (start, i) => counts === undefined
      ? [formatReadingTime(start), numberOrNull(this.values[i] as number)]
      : [formatReadingTime(start), numberOrNull(this.values[i] as number), counts[i] as number])
  }

  toJSON (): ([string, number | null] | [string, number | null, number])[] { return this.tuples() }

  /**
   * `head`, the JSON of the response up to the `readings` member (an object's opening and its
   * members followed by a comma), then `"readings":[...]}`: the bytes JSON.stringify would make of
   * the whole response, non-finite values as null.
   */
  json (head: string): Buffer {
    const out = Buffer.allocUnsafe(Buffer.byteLength(head) + 14 + this.tuplesBytes())
    let n = out.write(head)
    n = ascii(out, n, '"readings":[')
    n = this.writeTuples(out, n, false)
    n = ascii(out, n, ']}')
    return out.subarray(0, n)
  }

  /**
   * The tuples alone, separated by commas, and preceded by one when `follows` (they continue a
   * list): a streamed answer's readings, a run of buckets at a time.
   */
  tuplesJson (follows: boolean): Buffer {
    const out = Buffer.allocUnsafe(1 + this.tuplesBytes())
    return out.subarray(0, this.writeTuples(out, 0, follows))
  }

  /** Every bucket of several series, in their order: the runs of one answer read apart. */
  static concat (series: readonly RollupSeries[]): RollupSeries {
    if (series.length === 1 && series[0] !== undefined) return series[0]
    const length = series.reduce((sum, s) => sum + s.length, 0)
    const withCounts = series.length > 0 && series.every((s) => s.counts !== undefined)
    const starts = new Float64Array(length)
    const values = new Float64Array(length)
    const counts = withCounts ? new Float64Array(length) : undefined
    let at = 0
    for (const s of series) {
      starts.set(s.starts, at)
      values.set(s.values, at)
      if (counts !== undefined && s.counts !== undefined) counts.set(s.counts, at)
      at += s.length
    }
    return new RollupSeries(starts, values, counts)
  }

  /** The most bytes writeTuples writes. */
  private tuplesBytes (): number {
    return this.starts.length * (TUPLE_BYTES + (this.counts === undefined ? 0 : 17))
  }

  /** The tuples into `out` from `n` (a comma first when `follows` and there are any); returns the end. */
  private writeTuples (out: Buffer, n: number, follows: boolean): number {
    const counts = this.counts
    const times = new ReadingTimeBytes('["')
    for (let i = 0; i < this.starts.length; i++) {
      if (i > 0 || follows) out[n++] = 0x2c // ,
      n = times.write(out, n, this.starts[i] as number)
      n = ascii(out, n, 'Z",')
      const value = this.values[i] as number
      n = ascii(out, n, Number.isFinite(value) ? String(value) : 'null')
      if (counts !== undefined) {
        out[n++] = 0x2c // ,
        n = ascii(out, n, String(counts[i] as number))
      }
      out[n++] = 0x5d // ]
    }
    return n
  }
}

const numberOrNull = (value: number): number | null => Number.isFinite(value) ? value : null
