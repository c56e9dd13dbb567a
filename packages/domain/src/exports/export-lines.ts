import { CopyRows, type RowBatch } from '@esp/db'
import { ascii, bytes, latin1, ReadingTimeBytes } from '../text-bytes.js'

/** the size of an output buffer */
const OUT_BYTES = 65_536
/** slots of the value-text cache (in pairs), a power of two, and the bytes each holds (no double prints longer than 25) */
const VALUE_SLOTS = 16_384
export const VALUE_BYTES = 32
const SLOT_SHIFT = 32 - Math.log2(VALUE_SLOTS)
/** the longest line one row of the long formats can make */
const MAX_LINE = 160
export const EXPORT_CSV_HEADER = 'recorded_at,sensor_id,value\n'
/** the header across devices */
export const DEVICES_CSV_HEADER = 'recorded_at,device_id,sensor_id,value\n'

/** The formats of one line per value. */
export type LongFormat = 'csv' | 'ndjson'

/**
 * The text of values as JavaScript prints them, the same shortest form the JSON API returns.
 * Number-to-text is the dearest step of a line (about 140 ns a value). Sensors report in steps
 * (0.01 °C, whole µg/m³), so a year of one sensor holds a few thousand distinct values: a cache
 * of pairs of slots, indexed by a hash of the value's bits, turns most of them into a copy of bytes.
 */
export class ValueTexts {
  private readonly keys = new Float64Array(VALUE_SLOTS).fill(NaN)
  private readonly lengths = new Uint8Array(VALUE_SLOTS)
  private readonly texts = new Uint8Array(VALUE_SLOTS * VALUE_BYTES)

  /** `json`: JSON has no NaN or Infinity, so they print as null; CSV writes them as PostgreSQL would. */
  constructor (private readonly json: boolean) {}

  /** Writes `value` (whose bits are `low` and `high`) into `out` at `at`, returning the next offset. */
  write (out: Uint8Array, at: number, value: number, low: number, high: number): number {
    let slot = (Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> SLOT_SHIFT) & ~1
    if (this.keys[slot] !== value) slot = this.keys[slot + 1] === value ? slot + 1 : this.cache(slot, value)
    return bytes(out, at, this.texts, slot * VALUE_BYTES, this.lengths[slot] as number)
  }

  /**
   * Puts `value`'s text in the first slot of its pair, `slot`, and returns it. The pair's first
   * slot moves to the second: with one slot a value, two values that hash alike and alternate
   * (a year of a sine in 0.01 steps does) missed on every turn. NaN never hits.
   */
  private cache (slot: number, value: number): number {
    this.keys[slot + 1] = this.keys[slot] as number
    this.lengths[slot + 1] = this.lengths[slot] as number
    this.texts.copyWithin((slot + 1) * VALUE_BYTES, slot * VALUE_BYTES, (slot + 1) * VALUE_BYTES)
    const text = this.json && !Number.isFinite(value) ? 'null' : String(value)
    this.keys[slot] = value
    this.lengths[slot] = ascii(this.texts, slot * VALUE_BYTES, text) - slot * VALUE_BYTES
    return slot
  }
}

/**
 * The text formats' output: lines are written straight into buffers that are handed on as they
 * are, no string per line and no copy, so a long export makes little garbage. A full buffer is
 * pushed and a new one taken, small enough for the allocator to recycle freed ones.
 */
export abstract class TextExport extends CopyRows {
  /** the buffer lines are written into, how far, and how much of it has been pushed */
  protected out: Buffer = Buffer.alloc(0)
  protected written = 0
  private pushed = 0

  /** Pushes the lines written since the last push: a view, never a copy, of the output buffer. */
  protected pushLines (): void {
    if (this.written > this.pushed) this.push(this.out.subarray(this.pushed, this.written))
    this.pushed = this.written
  }

  /** Pushes what `out` holds up to `written` and takes a buffer with room for at least `line` bytes. */
  protected freshBuffer (written: number, line: number): Buffer {
    this.written = written
    this.pushLines()
    this.out = Buffer.allocUnsafeSlow(Math.max(OUT_BYTES, 2 * line))
    this.written = this.pushed = 0
    return this.out
  }
}

/**
 * Turns the export's binary COPY into CSV or NDJSON lines, one per value. PostgreSQL sends binary
 * values with no formatting at all, so the database side of an export costs what the scan costs,
 * and the text is built here, on the other core. Lines are ASCII. Values print as ValueTexts
 * prints them, and times as formatReadingTime does.
 *
 * A line is made of byte runs that change rarely, kept ready: the line's head up to the day (a new
 * day every 1440 rows of 1-minute data), the clock, and what joins the time to the value, which names
 * the sensor (rows come by sensor). Only the clock's digits and the value are new on most rows.
 * Across devices (`withDevice`) the join also names the device; rows come by time there, so the
 * joins of the pairs seen are kept rather than made again on every row.
 */
export class ExportLines extends TextExport {
  private readonly ndjson: boolean
  /** the line's head and its time, up to the `Z` */
  private readonly times: ReadingTimeBytes
  private sensor = Number.NaN
  private device = Number.NaN
  /** `Z` and what follows the time up to the value, for `device` and `sensor` */
  private join: Uint8Array = new Uint8Array(0)
  /** joins made, by device then sensor (across devices only) */
  private readonly joins = new Map<number, Map<number, Uint8Array>>()
  private readonly lineEnd: Uint8Array
  private readonly texts: ValueTexts
  private readonly nullValue: Uint8Array

  constructor (format: LongFormat, private readonly withDevice = false) {
    super()
    this.ndjson = format === 'ndjson'
    this.times = new ReadingTimeBytes(this.ndjson ? '{"recorded_at":"' : '')
    this.lineEnd = latin1(this.ndjson ? '}\n' : '\n')
    this.nullValue = latin1(this.ndjson ? 'null' : '')
    this.texts = new ValueTexts(this.ndjson)
    if (!this.ndjson) this.push(withDevice ? DEVICES_CSV_HEADER : EXPORT_CSV_HEADER)
  }

  protected override rows (batch: RowBatch): void {
    const { times, sensors, devices, values, bits, nulls } = batch
    let out = this.out
    let n = this.written
    for (let i = 0; i < batch.length; i++) {
      if (n > out.length - MAX_LINE) {
        out = this.freshBuffer(n, MAX_LINE)
        n = 0
      }
      const sensor = sensors[i] as number
      const device = devices[i] as number
      if (sensor !== this.sensor || device !== this.device) this.joinChanged(device, sensor)
      n = this.times.write(out, n, times[i] as number)
      n = bytes(out, n, this.join, 0, this.join.length)
      n = nulls[i] === 1
        ? bytes(out, n, this.nullValue, 0, this.nullValue.length)
        : this.texts.write(out, n, values[i] as number, bits[2 * i] as number, bits[2 * i + 1] as number)
      n = bytes(out, n, this.lineEnd, 0, this.lineEnd.length)
    }
    this.written = n
    this.pushLines()
  }

  private joinChanged (device: number, sensor: number): void {
    this.sensor = sensor
    this.device = device
    if (!this.withDevice) {
      this.join = latin1(this.ndjson ? `Z","sensor_id":${sensor},"value":` : `Z,${sensor},`)
      return
    }
    let ofDevice = this.joins.get(device)
    if (ofDevice === undefined) this.joins.set(device, ofDevice = new Map())
    let join = ofDevice.get(sensor)
    if (join === undefined) {
      join = latin1(this.ndjson ? `Z","device_id":${device},"sensor_id":${sensor},"value":` : `Z,${device},${sensor},`)
      ofDevice.set(sensor, join)
    }
    this.join = join
  }

  protected override finish (): void {}
}
