import { Transform, type TransformCallback } from 'node:stream'
import { ascii, bytes, latin1, ReadingTimeBytes } from '../text-bytes.js'
import { COPY_BINARY_SIGNATURE, timestampMsAt } from '@esp/db'
import type { ExportFormat } from './copy-sql.js'

/** the largest binary row (with a float8) and the longest line one row can make */
const MAX_ROW = 34
const MAX_LINE = 128
/** the size of an output buffer */
const OUT_BYTES = 65_536
/** slots of the value-text cache (in pairs), a power of two, and the bytes each holds (no double prints longer than 25) */
const VALUE_SLOTS = 16_384
const VALUE_BYTES = 32
const SLOT_SHIFT = 32 - Math.log2(VALUE_SLOTS)
export const EXPORT_CSV_HEADER = 'recorded_at,sensor_id,value\n'

/**
 * Turns a binary `COPY` of (recorded_at timestamptz, sensor_id int4, value float8) rows into the
 * export's CSV or NDJSON lines. PostgreSQL sends binary values with no formatting at all, so the
 * database side of an export costs what the scan costs, and the text is built here, on the other
 * core. Lines are ASCII, and a row cut between two chunks waits for the rest. Values print as
 * JavaScript prints numbers, the same shortest form the JSON API returns, and times as
 * formatReadingTime prints them.
 *
 * A line is made of byte runs that change rarely, kept ready: the line's head up to the day (a new
 * day every 1440 rows of 1-minute data), the clock, and what joins the time to the value, which names
 * the sensor (rows come by sensor). Only the clock's digits and the value are new on most rows.
 */
export class ExportLines extends Transform {
  private readonly ndjson: boolean
  private pending: Buffer | null = null
  private headerRead = false
  private ended = false
  /** the buffer lines are written into, how far, and how much of it has been pushed */
  private out = Buffer.alloc(0)
  private written = 0
  private pushed = 0
  /** the line's head and its time, up to the `Z` */
  private readonly times: ReadingTimeBytes
  private sensor = Number.NaN
  /** `Z` and what follows the time up to the value, for `sensor` */
  private join: Uint8Array = new Uint8Array(0)
  private readonly lineEnd: Uint8Array
  // Number-to-text is the dearest step of a line (about 140 ns a value). Sensors report in steps
  // (0.01 °C, whole µg/m³), so a year of one sensor holds a few thousand distinct values: a cache
  // of pairs of slots, indexed by a hash of the value's bits, turns most of them into a copy of bytes.
  private readonly valueKeys = new Float64Array(VALUE_SLOTS).fill(NaN)
  private readonly valueLengths = new Uint8Array(VALUE_SLOTS)
  private readonly valueBytes = new Uint8Array(VALUE_SLOTS * VALUE_BYTES)
  private readonly nullValue: Uint8Array

  constructor (format: ExportFormat) {
    super()
    this.ndjson = format === 'ndjson'
    this.times = new ReadingTimeBytes(this.ndjson ? '{"recorded_at":"' : '')
    this.lineEnd = latin1(this.ndjson ? '}\n' : '\n')
    this.nullValue = latin1(this.ndjson ? 'null' : '')
    if (!this.ndjson) this.push(EXPORT_CSV_HEADER)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let buf = chunk
    let at = 0
    if (!this.headerRead) {
      if (this.pending !== null) {
        buf = Buffer.concat([this.pending, chunk])
        this.pending = null
      }
      if (buf.length < 19) { this.pending = buf; callback(); return }
      if (!buf.subarray(0, 11).equals(COPY_BINARY_SIGNATURE)) { callback(new Error('not a binary COPY stream')); return }
      const headerEnd = 19 + buf.readInt32BE(15)
      if (buf.length < headerEnd) { this.pending = buf; callback(); return }
      at = headerEnd
      this.headerRead = true
    }
    try {
      if (this.pending !== null) {
        // The row cut at the end of the last chunk is completed from the head of this one, so the
        // chunk itself is never copied.
        const pending = this.pending
        this.pending = null
        const used = this.lines(Buffer.concat([pending, chunk.subarray(0, MAX_ROW)]), 0)
        if (used >= pending.length) {
          at = used - pending.length
        } else {
          buf = Buffer.concat([pending, chunk])
          at = 0
        }
      }
      at = this.lines(buf, at)
    } catch (err) {
      callback(err as Error)
      return
    }
    if (at < buf.length && !this.ended) this.pending = buf.subarray(at)
    this.pushLines()
    callback()
  }

  /** Pushes the lines written since the last push: a view, never a copy, of the output buffer. */
  private pushLines (): void {
    if (this.written > this.pushed) this.push(this.out.subarray(this.pushed, this.written))
    this.pushed = this.written
  }

  /** Writes the lines of the complete rows of `buf` from `at` into the output buffer; returns where the rows stop. */
  private lines (buf: Buffer, from: number): number {
    const view = new DataView(buf.buffer, buf.byteOffset, buf.length)
    let out = this.out
    let n = this.written
    let at = from
    while (!this.ended && at + 2 <= buf.length) {
      const fields = view.getInt16(at)
      if (fields === -1) { this.ended = true; at += 2; break }
      if (fields !== 3) throw new Error(`an export row has ${fields} fields, not 3`)
      // A complete row: 2 + (4 + 8) + (4 + 4) + (4 + 8), or 8 bytes less with a null value.
      if (at + 26 > buf.length) break
      const valueLength = view.getInt32(at + 22)
      const rowEnd = at + 26 + (valueLength === -1 ? 0 : valueLength)
      if (rowEnd > buf.length) break
      if (view.getInt32(at + 2) !== 8 || view.getInt32(at + 14) !== 4 || (valueLength !== 8 && valueLength !== -1)) {
        throw new Error('an export row is not (timestamptz, int4, float8)')
      }
      if (n > out.length - MAX_LINE) {
        // Lines are written straight into buffers that are handed on as they are: no string per
        // line and no copy, so a long export makes little garbage. A full one is pushed and a new
        // one taken, small enough for the allocator to recycle freed ones.
        this.written = n
        this.pushLines()
        out = this.out = Buffer.allocUnsafeSlow(OUT_BYTES)
        n = this.written = this.pushed = 0
      }
      const ms = timestampMsAt(view, at + 6)
      const sensor = view.getInt32(at + 18)
      if (sensor !== this.sensor) this.sensorChanged(sensor)
      n = this.times.write(out, n, ms)
      n = bytes(out, n, this.join, 0, this.join.length)
      if (valueLength === -1) {
        n = bytes(out, n, this.nullValue, 0, this.nullValue.length)
      } else {
        const hi = view.getUint32(at + 26)
        let slot = (Math.imul(view.getUint32(at + 30) ^ Math.imul(hi, 0x85ebca6b), 0x9e3779b1) >>> SLOT_SHIFT) & ~1
        const value = view.getFloat64(at + 26)
        if (this.valueKeys[slot] !== value) slot = this.valueKeys[slot + 1] === value ? slot + 1 : this.cacheValue(slot, value)
        n = bytes(out, n, this.valueBytes, slot * VALUE_BYTES, this.valueLengths[slot] as number)
      }
      n = bytes(out, n, this.lineEnd, 0, this.lineEnd.length)
      at = rowEnd
    }
    this.written = n
    return at
  }

  private sensorChanged (sensor: number): void {
    this.sensor = sensor
    this.join = latin1(this.ndjson ? `Z","sensor_id":${sensor},"value":` : `Z,${sensor},`)
  }

  /**
   * Puts `value`'s text in the first slot of its pair, `slot`, and returns it. The pair's first
   * slot moves to the second: with one slot a value, two values that hash alike and alternate
   * (a year of a sine in 0.01 steps does) missed on every turn.
   */
  private cacheValue (slot: number, value: number): number {
    this.valueKeys[slot + 1] = this.valueKeys[slot] as number
    this.valueLengths[slot + 1] = this.valueLengths[slot] as number
    this.valueBytes.copyWithin((slot + 1) * VALUE_BYTES, slot * VALUE_BYTES, (slot + 1) * VALUE_BYTES)
    // JSON has no NaN or Infinity; CSV writes them as PostgreSQL would. NaN never hits.
    const text = this.ndjson && !Number.isFinite(value) ? 'null' : String(value)
    this.valueKeys[slot] = value
    this.valueLengths[slot] = ascii(this.valueBytes, slot * VALUE_BYTES, text) - slot * VALUE_BYTES
    return slot
  }

  override _flush (callback: TransformCallback): void {
    callback(this.ended ? null : new Error('the export ended before the COPY did'))
  }
}
