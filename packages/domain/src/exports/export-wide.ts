import type { RowBatch } from '@esp/db'
import { bytes, latin1, READING_TIME_BYTES, ReadingTimeBytes } from '../text-bytes.js'
import { csvCell } from './csv-cell.js'
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
 * history. Values and times print as in the long CSV. Across devices (`withDevice`) a line is a
 * time and a device, whose id is the second column: rows come by time, then device.
 */
export class WideCsvLines extends TextExport {
  /** column of each sensor id */
  private readonly columnOf = new Map<number, number>()
  /** the line being filled: a value and its bits per column, and whether it has one */
  private readonly cells: Float64Array
  private readonly cellBits: Uint32Array
  private readonly filled: Uint8Array
  private time = Number.NaN
  private device = Number.NaN
  /** `,` and each device's id as bytes, made once a device (across devices) */
  private readonly deviceCells = new Map<number, Uint8Array>()
  private readonly times = new ReadingTimeBytes('')
  private readonly texts = new ValueTexts(false)
  /** the longest line: the time, then a comma and a value per column */
  private readonly maxLine: number

  constructor (columns: readonly WideColumn[], private readonly withDevice = false) {
    super()
    columns.forEach((c, i) => this.columnOf.set(c.id, i))
    this.cells = new Float64Array(columns.length)
    this.cellBits = new Uint32Array(this.cells.buffer)
    this.filled = new Uint8Array(columns.length)
    // A device id has at most 10 digits.
    this.maxLine = READING_TIME_BYTES + 2 + (withDevice ? 11 : 0) + columns.length * (1 + VALUE_BYTES)
    this.push(['recorded_at', ...(withDevice ? ['device_id'] : []), ...columns.map((c) => csvCell(wideColumnLabel(c)))].join(',') + '\n')
  }

  protected override rows (batch: RowBatch): void {
    const { times, sensors, devices, values, nulls } = batch
    for (let i = 0; i < batch.length; i++) {
      const time = times[i] as number
      const device = devices[i] as number
      if (time !== this.time || device !== this.device) {
        this.writeLine()
        this.time = time
        this.device = device
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
    if (this.withDevice) {
      let cell = this.deviceCells.get(this.device)
      if (cell === undefined) this.deviceCells.set(this.device, cell = latin1(`,${this.device}`))
      n = bytes(out, n, cell, 0, cell.length)
    }
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
