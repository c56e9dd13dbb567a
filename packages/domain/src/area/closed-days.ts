/**
 * Hourly values of closed days, kept per process for an area's statistics: a month of hours over a
 * thousand devices is 720,000 tier rows, and reading them again for every request cost PostgreSQL
 * most of the answer's time, though no past hour had changed. A day is kept for a device's sensor
 * under its closed hours' revision (latest_readings.history_revision, which the write path moves
 * whenever it stores a reading older than the hour of the sensor's latest one), and only when the
 * whole day lies before that hour: appending readings never changes it, and anything else moves the
 * revision, which drops the pair's days. Bounded in bytes; the pairs used least recently go first.
 */
const HOURS = 24
/** A kept day's bytes: its 24 numbers, the array and the map's entry. */
const DAY_BYTES = HOURS * 8 + 120

interface KeptPair { revision: number, days: Map<number, Float64Array> }

export class ClosedDays {
  private readonly pairs = new Map<string, KeptPair>()
  private bytes = 0

  constructor (private readonly maxBytes: number) {}

  /** days kept, over every pair */
  get size (): number { return this.bytes / DAY_BYTES }

  /** The 24 hourly values (NaN where none) of the UTC day starting at `day`, if kept under `revision`. */
  get (key: string, revision: number, day: number): Float64Array | undefined {
    const pair = this.pairs.get(key)
    if (pair === undefined) return undefined
    if (pair.revision !== revision) {
      this.drop(key, pair)
      return undefined
    }
    // Moved to the end: the map's order is the order of use.
    this.pairs.delete(key)
    this.pairs.set(key, pair)
    return pair.days.get(day)
  }

  keep (key: string, revision: number, day: number, values: Float64Array): void {
    if (this.maxBytes < DAY_BYTES) return
    let pair = this.pairs.get(key)
    if (pair !== undefined && pair.revision !== revision) {
      this.drop(key, pair)
      pair = undefined
    }
    if (pair === undefined) {
      pair = { revision, days: new Map() }
      this.pairs.set(key, pair)
    }
    if (!pair.days.has(day)) this.bytes += DAY_BYTES
    pair.days.set(day, values)
    for (const [oldest, kept] of this.pairs) {
      if (this.bytes <= this.maxBytes) break
      if (kept === pair) continue
      this.drop(oldest, kept)
    }
  }

  private drop (key: string, pair: KeptPair): void {
    this.bytes -= pair.days.size * DAY_BYTES
    this.pairs.delete(key)
  }
}
