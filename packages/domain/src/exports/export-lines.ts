import { Transform, type TransformCallback } from 'node:stream'
import { writeReadingTime } from '../time.js'
import { COPY_BINARY_SIGNATURE, PG_EPOCH_MS, TWO_32 } from '@esp/db'
import type { ExportFormat } from './copy-sql.js'

/** the smallest and largest binary rows (a null value, a float8) and the longest line one row can make */
const MIN_ROW = 26
const MAX_ROW = 34
const MAX_LINE = 128
/** slots of the value-text cache, a power of two */
const VALUE_SLOTS = 16_384

/**
 * Copies a short ASCII string into `out` at `at`, returning the next offset. A loop the JIT inlines
 * is several times cheaper than Buffer#write for strings of a few characters.
 */
function ascii (out: Buffer, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) out[at + i] = text.charCodeAt(i)
  return at + text.length
}

export const EXPORT_CSV_HEADER = 'recorded_at,sensor_id,value\n'

/**
 * Turns a binary `COPY` of (recorded_at timestamptz, sensor_id int4, value float8) rows into the
 * export's CSV or NDJSON lines. PostgreSQL sends binary values with no formatting at all, so the
 * database side of an export costs what the scan costs, and the text is built here, on the other
 * core. Lines are ASCII, one chunk out per chunk in, and a row cut between two chunks waits for the
 * rest. Values print as JavaScript prints numbers, the same shortest form the JSON API returns.
 */
export class ExportLines extends Transform {
  private readonly ndjson: boolean
  private pending: Buffer | null = null
  private headerRead = false
  private ended = false
  private scratch = Buffer.alloc(0)
  private sensor = -1
  private sensorText = ''
  /** bytes of lines in `scratch` for the chunk being transformed */
  private written = 0
  // Number-to-text is the dearest step of a line (about 140 ns a value). Sensors report in steps
  // (0.01 °C, whole µg/m³), so a year of one sensor holds a few thousand distinct values: a
  // direct-mapped cache, indexed by the value's own bits, turns most of them into a lookup.
  private readonly valueKeys = new Float64Array(VALUE_SLOTS).fill(NaN)
  private readonly valueTexts: string[] = new Array<string>(VALUE_SLOTS).fill('')

  constructor (format: ExportFormat) {
    super()
    this.ndjson = format === 'ndjson'
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
    // Written straight into one reused buffer and copied out once per chunk: no string per line,
    // so a long export makes little garbage (the young generation would otherwise grow with it).
    const most = (Math.ceil((buf.length - at) / MIN_ROW) + 1) * MAX_LINE
    if (this.scratch.length < most) this.scratch = Buffer.allocUnsafeSlow(most)
    this.written = 0
    try {
      if (this.pending !== null) {
        // The row cut at the end of the last chunk is completed from the head of this one, so the
        // chunk itself is never copied.
        const pending = this.pending
        this.pending = null
        const joined = Buffer.concat([pending, chunk.subarray(0, MAX_ROW)])
        const used = this.lines(joined, 0)
        if (used >= pending.length) {
          at = used - pending.length
        } else {
          buf = Buffer.concat([pending, chunk])
          at = 0
          this.written = 0
        }
      }
      at = this.lines(buf, at)
    } catch (err) {
      callback(err as Error)
      return
    }
    if (at < buf.length && !this.ended) this.pending = buf.subarray(at)
    callback(null, this.written === 0 ? undefined : Buffer.from(this.scratch.subarray(0, this.written)))
  }

  /** Writes the lines of the complete rows of `buf` from `at` into the scratch buffer; returns where the rows stop. */
  private lines (buf: Buffer, from: number): number {
    const out = this.scratch
    const ndjson = this.ndjson
    let n = this.written
    let at = from
    while (!this.ended && at + 2 <= buf.length) {
      const fields = buf.readInt16BE(at)
      if (fields === -1) { this.ended = true; at += 2; break }
      if (fields !== 3) throw new Error(`an export row has ${fields} fields, not 3`)
      // A complete row: 2 + (4 + 8) + (4 + 4) + (4 + 8), or 8 bytes less with a null value.
      if (at + 26 > buf.length) break
      const valueLength = buf.readInt32BE(at + 22)
      const rowEnd = at + 26 + (valueLength === -1 ? 0 : valueLength)
      if (rowEnd > buf.length) break
      if (buf.readInt32BE(at + 2) !== 8 || buf.readInt32BE(at + 14) !== 4 || (valueLength !== 8 && valueLength !== -1)) {
        throw new Error('an export row is not (timestamptz, int4, float8)')
      }
      const micros = buf.readInt32BE(at + 6) * TWO_32 + buf.readUInt32BE(at + 10)
      const sensor = buf.readInt32BE(at + 18)
      if (sensor !== this.sensor) {
        this.sensor = sensor
        this.sensorText = String(sensor)
      }
      let valueText: string
      if (valueLength === -1) {
        valueText = ndjson ? 'null' : ''
      } else {
        const value = buf.readDoubleBE(at + 26)
        const hi = buf.readUInt32BE(at + 26)
        const slot = (buf.readUInt32BE(at + 30) ^ hi ^ (hi >>> 13)) & (VALUE_SLOTS - 1)
        if (this.valueKeys[slot] === value) {
          valueText = this.valueTexts[slot] ?? String(value)
        } else {
          // JSON has no NaN or Infinity; CSV writes them as PostgreSQL would. NaN never hits.
          valueText = ndjson && !Number.isFinite(value) ? 'null' : String(value)
          this.valueKeys[slot] = value
          this.valueTexts[slot] = valueText
        }
      }
      const ms = Math.floor(micros / 1000) + PG_EPOCH_MS
      if (ndjson) {
        n = ascii(out, n, '{"recorded_at":"')
        n = writeReadingTime(out, n, ms)
        n = ascii(out, n, '","sensor_id":')
        n = ascii(out, n, this.sensorText)
        n = ascii(out, n, ',"value":')
        n = ascii(out, n, valueText)
        out[n++] = 0x7d // }
      } else {
        n = writeReadingTime(out, n, ms)
        out[n++] = 0x2c // ,
        n = ascii(out, n, this.sensorText)
        out[n++] = 0x2c
        n = ascii(out, n, valueText)
      }
      out[n++] = 0x0a // \n
      at = rowEnd
    }
    this.written = n
    return at
  }

  override _flush (callback: TransformCallback): void {
    callback(this.ended ? null : new Error('the export ended before the COPY did'))
  }
}
