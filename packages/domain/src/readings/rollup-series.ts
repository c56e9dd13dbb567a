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
    const counts = this.counts
    const out = Buffer.allocUnsafe(Buffer.byteLength(head) + 14 + this.starts.length * (TUPLE_BYTES + (counts === undefined ? 0 : 17)))
    let n = out.write(head)
    n = ascii(out, n, '"readings":[')
    const times = new ReadingTimeBytes('["')
    for (let i = 0; i < this.starts.length; i++) {
      if (i > 0) out[n++] = 0x2c // ,
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
    n = ascii(out, n, ']}')
    return out.subarray(0, n)
  }
}

const numberOrNull = (value: number): number | null => Number.isFinite(value) ? value : null
