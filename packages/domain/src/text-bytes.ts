import { DAY_MS, formatReadingTime, readingDatePrefix } from './time.js'

/**
 * Text written straight into byte buffers, for the responses of thousands of readings (exports,
 * fine rollups): a string per time or per line was most of their garbage.
 */

/** `00` to `99`, two ASCII digits each */
const TWO_DIGITS = Uint8Array.from({ length: 200 }, (_, i) => 0x30 + (i % 2 === 0 ? Math.floor(i / 20) : (i >> 1) % 10))

/**
 * Copies `length` bytes of `from` at `start` into `out` at `at`, returning the next offset. For the
 * few bytes of a field, a loop the JIT inlines is several times cheaper than a native copy.
 */
export function bytes (out: Uint8Array, at: number, from: Uint8Array, start: number, length: number): number {
  for (let i = 0; i < length; i++) out[at + i] = from[start + i] as number
  return at + length
}

/** Copies a short ASCII string into `out` at `at`, returning the next offset. */
export function ascii (out: Uint8Array, at: number, text: string): number {
  for (let i = 0; i < text.length; i++) out[at + i] = text.charCodeAt(i)
  return at + text.length
}

export const latin1 = (text: string): Uint8Array => Buffer.from(text, 'latin1')

/** The most bytes ReadingTimeBytes writes for a time: the long form of far years, less its `Z`. */
export const READING_TIME_BYTES = 26

/**
 * Writes a time as formatReadingTime prints it, without the closing `Z`, after a fixed `head`.
 * Readings come minutes or days apart, so the head and the date (`YYYY-MM-DDT`) of the last day
 * seen are kept as bytes and only the clock's digits are new on most times.
 */
export class ReadingTimeBytes {
  /** the day whose head is kept: [dayStart, dayStart + DAY_MS) in epoch ms */
  private dayStart = Number.NaN
  private dayHead: Uint8Array = new Uint8Array(0)

  constructor (private readonly head: string) {}

  /** Writes the head and the time of `ms` into `out` at `at`, returning the next offset. */
  write (out: Uint8Array, at: number, ms: number): number {
    let into = ms - this.dayStart
    if (!(into >= 0 && into < DAY_MS)) {
      const prefix = readingDatePrefix(ms)
      // Years outside 0000-9999 print in the long form: no day is kept for them.
      if (prefix === null) return ascii(out, at, this.head + formatReadingTime(ms).slice(0, -1))
      this.dayStart = Math.floor(ms / DAY_MS) * DAY_MS
      this.dayHead = latin1(this.head + prefix)
      into = ms - this.dayStart
    }
    let n = bytes(out, at, this.dayHead, 0, this.dayHead.length)
    const seconds = Math.floor(into / 1000)
    const fraction = into - seconds * 1000
    const hours = Math.floor(seconds / 3600)
    const minutes = Math.floor(seconds / 60) - hours * 60
    const secs = seconds - Math.floor(seconds / 60) * 60
    out[n] = TWO_DIGITS[hours * 2] as number
    out[n + 1] = TWO_DIGITS[hours * 2 + 1] as number
    out[n + 2] = 0x3a // :
    out[n + 3] = TWO_DIGITS[minutes * 2] as number
    out[n + 4] = TWO_DIGITS[minutes * 2 + 1] as number
    out[n + 5] = 0x3a
    out[n + 6] = TWO_DIGITS[secs * 2] as number
    out[n + 7] = TWO_DIGITS[secs * 2 + 1] as number
    n += 8
    if (fraction !== 0) {
      out[n] = 0x2e // .
      out[n + 1] = 0x30 + Math.floor(fraction / 100)
      out[n + 2] = TWO_DIGITS[(fraction % 100) * 2] as number
      out[n + 3] = TWO_DIGITS[(fraction % 100) * 2 + 1] as number
      n += 4
    }
    return n
  }
}
