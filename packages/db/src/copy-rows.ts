import { Transform, type TransformCallback } from 'node:stream'
import { COPY_BINARY_SIGNATURE, timestampMsAt } from './copy-binary.js'

/** the largest binary row: 2 + (4 + 8) + (4 + 4) + (4 + 8) bytes, and (4 + 4) more with the device */
const MAX_ROW = 42
/** rows decoded before they are handed on: a few socket chunks' worth */
const BATCH_ROWS = 8192

/**
 * Decoded export rows as columns, reused from one batch to the next: whoever keeps rows copies
 * them. `bits` is `values` as 32-bit halves (little-endian: low at 2i, high at 2i + 1).
 */
export class RowBatch {
  length = 0
  /** epoch ms, floored as the text formats print them */
  readonly times = new Float64Array(BATCH_ROWS)
  readonly sensors = new Int32Array(BATCH_ROWS)
  /** the device of each row: 0 in a one-device export, whose COPY leaves the device out */
  readonly devices = new Int32Array(BATCH_ROWS)
  readonly values = new Float64Array(BATCH_ROWS)
  readonly bits = new Uint32Array(this.values.buffer)
  /** 1 where the reading has no value (`values` holds 0 there) */
  readonly nulls = new Uint8Array(BATCH_ROWS)
  /** rows of this batch with no value */
  nullCount = 0
}

/**
 * Reads PostgreSQL's binary `COPY` of the export's (recorded_at timestamptz, sensor_id int4,
 * value float8) rows, or (…, device_id int4) across devices, and hands them on in column batches
 * to `rows`; every export format builds on it. A row cut between two chunks waits for the rest; a
 * COPY that ends before its trailer is an error, never a short file.
 */
export abstract class CopyRows extends Transform {
  private pending: Buffer | null = null
  private headerRead = false
  private ended = false
  private readonly batch = new RowBatch()

  /** Takes a batch of rows, in the COPY's order; the batch is reused once this returns. */
  protected abstract rows (batch: RowBatch): void

  /** Called once after the last row, before the stream ends. */
  protected abstract finish (): void

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
        const used = this.decode(Buffer.concat([pending, chunk.subarray(0, MAX_ROW)]), 0)
        if (used >= pending.length) {
          at = used - pending.length
        } else {
          buf = Buffer.concat([pending, chunk])
          at = 0
        }
      }
      at = this.decode(buf, at)
      this.handOn()
    } catch (err) {
      callback(err as Error)
      return
    }
    if (at < buf.length && !this.ended) this.pending = buf.subarray(at)
    callback()
  }

  /** Decodes the complete rows of `buf` from `from` into the batch; returns where the rows stop. */
  private decode (buf: Buffer, from: number): number {
    const view = new DataView(buf.buffer, buf.byteOffset, buf.length)
    const batch = this.batch
    let at = from
    while (!this.ended && at + 2 <= buf.length) {
      const fields = view.getInt16(at)
      if (fields === -1) { this.ended = true; at += 2; break }
      if (fields !== 3 && fields !== 4) throw new Error(`an export row has ${fields} fields, not 3 or 4`)
      // A complete row, or 8 bytes less with a null value.
      if (at + 26 > buf.length) break
      const valueLength = view.getInt32(at + 22)
      const valueEnd = at + 26 + (valueLength === -1 ? 0 : valueLength)
      const rowEnd = fields === 4 ? valueEnd + 8 : valueEnd
      if (rowEnd > buf.length) break
      if (view.getInt32(at + 2) !== 8 || view.getInt32(at + 14) !== 4 || (valueLength !== 8 && valueLength !== -1) || (fields === 4 && view.getInt32(valueEnd) !== 4)) {
        throw new Error('an export row is not (timestamptz, int4, float8[, int4])')
      }
      if (batch.length === BATCH_ROWS) this.handOn()
      const i = batch.length++
      batch.times[i] = timestampMsAt(view, at + 6)
      batch.sensors[i] = view.getInt32(at + 18)
      if (valueLength === -1) {
        batch.values[i] = 0
        batch.nulls[i] = 1
        batch.nullCount++
      } else {
        batch.values[i] = view.getFloat64(at + 26)
        batch.nulls[i] = 0
      }
      batch.devices[i] = fields === 4 ? view.getInt32(valueEnd + 4) : 0
      at = rowEnd
    }
    return at
  }

  private handOn (): void {
    if (this.batch.length === 0) return
    this.rows(this.batch)
    this.batch.length = 0
    this.batch.nullCount = 0
  }

  override _flush (callback: TransformCallback): void {
    if (!this.ended) { callback(new Error('the export ended before the COPY did')); return }
    try {
      this.finish()
    } catch (err) {
      callback(err as Error)
      return
    }
    callback()
  }
}
