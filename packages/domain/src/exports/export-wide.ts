import { READING_TIME_BYTES, ReadingTimeBytes } from '../text-bytes.js'
import type { RowBatch } from './copy-rows.js'
import { csvCell } from './copy-sql.js'
import { TextExport, VALUE_BYTES, ValueTexts } from './export-lines.js'

/** A sensor column of the wide CSV. */
export interface WideColumn { id: number, name: string, unit: string | null, measurement: string | null }

/** `Air Temperature (ºC) [55]`: what was measured (the sensor's name when the catalogue has no measurement), its unit, and the sensor id that tells two alike apart. */
export function wideColumnLabel (column: WideColumn): string {
  const unit = column.unit === null || column.unit === '' ? '' : ` (${column.unit})`
  return `${column.measurement ?? column.name}${unit} [${column.id}]`
}

const COMMA = 0x2c
const Z = 0x5a
const NEWLINE = 0x0a

/**
 * The wide CSV: one line per time, one column per sensor, empty where a sensor has no value then.
 * The COPY comes ordered by time (exportByTimeCopySql), so a line is complete as soon as the next
 * time begins, and only that line is held: memory does not grow with the range or the device's
 * history. Values and times print as in the long CSV.
 */
export class WideCsvLines extends TextExport {
  /** column of each sensor id */
  private readonly columnOf = new Map<number, number>()
  /** the line being filled: a value and its bits per column, and whether it has one */
  private readonly cells: Float64Array
  private readonly cellBits: Uint32Array
  private readonly filled: Uint8Array
  private time = Number.NaN
  private readonly times = new ReadingTimeBytes('')
  private readonly texts = new ValueTexts(false)
  /** the longest line: the time, then a comma and a value per column */
  private readonly maxLine: number

  constructor (columns: readonly WideColumn[]) {
    super()
    columns.forEach((c, i) => this.columnOf.set(c.id, i))
    this.cells = new Float64Array(columns.length)
    this.cellBits = new Uint32Array(this.cells.buffer)
    this.filled = new Uint8Array(columns.length)
    this.maxLine = READING_TIME_BYTES + 2 + columns.length * (1 + VALUE_BYTES)
    this.push(['recorded_at', ...columns.map((c) => csvCell(wideColumnLabel(c)))].join(',') + '\n')
  }

  protected override rows (batch: RowBatch): void {
    const { times, sensors, values, nulls } = batch
    for (let i = 0; i < batch.length; i++) {
      const time = times[i] as number
      if (time !== this.time) {
        this.writeLine()
        this.time = time
      }
      // A null reading is an empty cell, as no reading is. The COPY holds only these columns' sensors.
      const column = this.columnOf.get(sensors[i] as number)
      if (column === undefined || nulls[i] === 1) continue
      this.cells[column] = values[i] as number
      this.filled[column] = 1
    }
    this.pushLines()
  }

  /** Writes the line of `time`, if one was begun, and empties the cells. */
  private writeLine (): void {
    if (Number.isNaN(this.time)) return
    let out = this.out
    let n = this.written
    if (n > out.length - this.maxLine) {
      out = this.freshBuffer(n, this.maxLine)
      n = 0
    }
    n = this.times.write(out, n, this.time)
    out[n++] = Z
    const { cells, cellBits, filled } = this
    for (let c = 0; c < filled.length; c++) {
      out[n++] = COMMA
      if (filled[c] === 1) {
        n = this.texts.write(out, n, cells[c] as number, cellBits[2 * c] as number, cellBits[2 * c + 1] as number)
        filled[c] = 0
      }
    }
    out[n++] = NEWLINE
    this.written = n
  }

  protected override finish (): void {
    this.writeLine()
    this.pushLines()
  }
}
