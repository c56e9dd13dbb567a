import { Buffer } from 'node:buffer'
import type { IdwGrid } from './idw.js'
import { classOf, type LegendClass } from './legend.js'

// The features of an interpolated grid as GeoJSON text (issue 38), written as bytes: no object or
// JSON.stringify per cell.

/**
 * Coordinates as text, rounded to 6 decimals (about 0.1 m), through a small cache of the last
 * ones: neighbouring cells share their edges and a row its latitudes, and printing a number is the
 * dearest part of the features' text.
 */
class CoordinateText {
  private readonly keys = new Float64Array(16).fill(NaN)
  private readonly texts: string[] = new Array<string>(16).fill('')
  private next = 0

  text (x: number): string {
    const key = Math.round(x * 1e6)
    for (let i = 0; i < 16; i++) if (this.keys[i] === key) return this.texts[i] as string
    const text = String(key / 1e6)
    this.keys[this.next] = key
    this.texts[this.next] = text
    this.next = (this.next + 1) & 15
    return text
  }
}

/**
 * ASCII text written into a growing byte array. The features of a large grid are millions of small
 * strings; held until a join, they survive the young generation and the collector took more than
 * half of the time (7 MB of text for 10,000 cells × 24 steps: about twice as slow as bytes, with
 * the platform's 8 MB semi-space). Numbers still go through String(), which dies young.
 */
class AsciiWriter {
  private bytes: Uint8Array
  private length = 0

  constructor (capacity: number) { this.bytes = new Uint8Array(Math.max(1024, capacity)) }

  write (text: string): void {
    const n = text.length
    if (this.length + n > this.bytes.length) this.grow(n)
    const bytes = this.bytes
    let at = this.length
    for (let i = 0; i < n; i++) bytes[at++] = text.charCodeAt(i)
    this.length = at
  }

  private grow (n: number): void {
    let size = this.bytes.length * 2
    while (size < this.length + n) size *= 2
    const grown = new Uint8Array(size)
    grown.set(this.bytes.subarray(0, this.length))
    this.bytes = grown
  }

  text (): string {
    return Buffer.from(this.bytes.buffer, 0, this.length).toString('latin1')
  }
}

const FEATURE_START = '{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[['

/**
 * The contract's `features` array as JSON text: a Polygon per kept cell with its values per step
 * (null for none) and their class indices. Written as text: no object or JSON.stringify per cell.
 */
export function gridFeaturesJson (grid: IdwGrid, classes: LegendClass[]): string {
  const { rings, values, steps, ringPositions } = grid
  // About the size of a feature, so that the buffer seldom grows.
  const out = new AsciiWriter(grid.cells * (120 + ringPositions * 24 + steps * 24))
  const lngs = new CoordinateText()
  const lats = new CoordinateText()
  const classTexts = classes.map((_, i) => String(i))
  out.write('[')
  for (let i = 0; i < grid.cells; i++) {
    if (i > 0) out.write(',')
    out.write(FEATURE_START)
    const ring = i * ringPositions * 2
    for (let k = 0; k < ringPositions; k++) {
      if (k > 0) out.write('],[')
      out.write(lngs.text(rings[ring + 2 * k] as number))
      out.write(',')
      out.write(lats.text(rings[ring + 2 * k + 1] as number))
    }
    out.write(']]]},"properties":{"values":[')
    for (let s = 0; s < steps; s++) {
      const v = values[i * steps + s] as number
      if (s > 0) out.write(',')
      // JSON has no NaN or Infinity: either is no value.
      out.write(v - v === 0 ? String(v) : 'null')
    }
    out.write('],"class":[')
    for (let s = 0; s < steps; s++) {
      const c = classOf(classes, values[i * steps + s] as number)
      if (s > 0) out.write(',')
      out.write(c < 0 ? 'null' : classTexts[c] as string)
    }
    out.write(']}}')
  }
  out.write(']')
  return out.text()
}
