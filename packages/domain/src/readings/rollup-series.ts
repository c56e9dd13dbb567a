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
  constructor (private readonly starts: Float64Array, private readonly values: Float64Array) {}

  get length (): number { return this.starts.length }

  /** The contract's `[recorded_at, value]` pairs. */
  tuples (): [string, number | null][] {
    return Array.from(this.starts, (start, i) => [formatReadingTime(start), numberOrNull(this.values[i] as number)])
  }

  toJSON (): [string, number | null][] { return this.tuples() }

  /**
   * `head`, the JSON of the response up to the `readings` member (an object's opening and its
   * members followed by a comma), then `"readings":[...]}`: the bytes JSON.stringify would make of
   * the whole response, non-finite values as null.
   */
  json (head: string): Buffer {
    const out = Buffer.allocUnsafe(Buffer.byteLength(head) + 14 + this.starts.length * TUPLE_BYTES)
    let n = out.write(head)
    n = ascii(out, n, '"readings":[')
    const times = new ReadingTimeBytes('["')
    for (let i = 0; i < this.starts.length; i++) {
      if (i > 0) out[n++] = 0x2c // ,
      n = times.write(out, n, this.starts[i] as number)
      n = ascii(out, n, 'Z",')
      const value = this.values[i] as number
      n = ascii(out, n, Number.isFinite(value) ? String(value) : 'null')
      out[n++] = 0x5d // ]
    }
    n = ascii(out, n, ']}')
    return out.subarray(0, n)
  }
}

const numberOrNull = (value: number): number | null => Number.isFinite(value) ? value : null
