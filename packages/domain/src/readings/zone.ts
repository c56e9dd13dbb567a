import { IANAZone } from 'luxon'
import { errors } from '../errors.js'

const DAY_MS = 86_400_000
const WEEK_MS = 7 * DAY_MS

/**
 * A time zone's UTC offsets, found once per calendar year and kept: the Intl lookup behind every
 * library's offset costs microseconds, and a year of daily buckets needs hundreds of them. A year
 * is sampled weekly (no zone changes its offset twice within a week) and each change is narrowed
 * to the millisecond, so afterwards an offset is a search among a few segments.
 */
export class ZoneOffsets {
  private readonly years = new Map<number, { starts: number[], offsets: number[] }>()

  constructor (private readonly zone: IANAZone) {}

  get name (): string { return this.zone.name }

  /** The offset in ms to add to a UTC instant to read the zone's wall clock. */
  offsetMs (t: number): number {
    const year = new Date(t).getUTCFullYear()
    let segments = this.years.get(year)
    if (segments === undefined) {
      segments = this.segmentsOf(year)
      this.years.set(year, segments)
    }
    const { starts, offsets } = segments
    let i = starts.length - 1
    while (i > 0 && (starts[i] as number) > t) i--
    return offsets[i] as number
  }

  /**
   * The longest step (a day, an hour, a quarter hour, a minute, a second) that divides every offset
   * and every change of offset of the zone between two instants: a stored tier of that length or
   * shorter holds no bucket that straddles a wall-clock boundary (only UTC-aligned tiers exist).
   */
  alignmentBetween (from: number, until: number): number {
    let step = DAY_MS
    const steps = [DAY_MS, 3_600_000, 900_000, 60_000, 1000, 1]
    const fits = (ms: number): void => { while (ms % step !== 0) step = steps[steps.indexOf(step) + 1] ?? 1 }
    for (let year = new Date(from).getUTCFullYear() - 1; year <= new Date(until).getUTCFullYear() + 1; year++) {
      this.offsetMs(Date.UTC(year, 6, 1))
      const { starts, offsets } = this.years.get(year) ?? { starts: [], offsets: [] }
      for (let i = 0; i < starts.length; i++) {
        fits(offsets[i] as number)
        if (i > 0) fits(starts[i] as number)
      }
    }
    return step
  }

  /** Every offset the zone has had between two instants (whole years), in ms. */
  offsetsBetween (from: number, until: number): number[] {
    const found = new Set<number>()
    for (let year = new Date(from).getUTCFullYear(); year <= new Date(until).getUTCFullYear(); year++) {
      this.offsetMs(Date.UTC(year, 6, 1))
      for (const offset of this.years.get(year)?.offsets ?? []) found.add(offset)
    }
    return [...found].sort((a, b) => a - b)
  }

  private exact (t: number): number { return this.zone.offset(t) * 60_000 }

  private segmentsOf (year: number): { starts: number[], offsets: number[] } {
    const first = Date.UTC(year, 0, 1)
    const end = Date.UTC(year + 1, 0, 1)
    const starts = [first]
    const offsets = [this.exact(first)]
    let before = first
    let offset = offsets[0] as number
    for (let at = Math.min(first + WEEK_MS, end - 1); ; at = Math.min(at + WEEK_MS, end - 1)) {
      const now = this.exact(at)
      if (now !== offset) {
        // The change lies in (before, at]: narrowed to the first instant of the new offset.
        let lo = before
        let hi = at
        while (hi - lo > 1) {
          const mid = lo + Math.floor((hi - lo) / 2)
          if (this.exact(mid) === offset) lo = mid
          else hi = mid
        }
        starts.push(hi)
        offsets.push(now)
        offset = now
      }
      before = at
      if (at >= end - 1) break
    }
    return { starts, offsets }
  }

  /**
   * The UTC instant from which a wall-clock time (epoch ms read as if UTC) has come for good: the
   * start of the bucket it begins. In a gap (clocks moved forward over it) the first instant after
   * the gap. When it happens twice (clocks moved back), the first time, unless the clocks then went
   * back past it (Newfoundland's 00:01 changes): then the wall clock shows the day before again,
   * and the day begins the second time.
   */
  utcOf (local: number): number {
    const before = this.offsetMs(local - DAY_MS)
    const after = this.offsetMs(local + DAY_MS)
    const early = local - before
    const late = local - after
    const earlyFits = this.offsetMs(early) === before
    const lateFits = this.offsetMs(late) === after
    if (earlyFits && lateFits) {
      if (early >= late) return late
      const change = this.changeAfter(early)
      return change < late ? late : early
    }
    if (earlyFits) return early
    if (lateFits) return late
    return Math.max(early, late)
  }

  /** The first change of offset after an instant (within the next year). */
  private changeAfter (t: number): number {
    const year = new Date(t).getUTCFullYear()
    for (const y of [year, year + 1]) {
      this.offsetMs(Date.UTC(y, 6, 1))
      const starts = this.years.get(y)?.starts ?? []
      for (let i = 1; i < starts.length; i++) if ((starts[i] as number) > t) return starts[i] as number
    }
    return Infinity
  }
}

const zones = new Map<string, ZoneOffsets | null>()

/**
 * The `timezone` parameter: an IANA name (case as the database writes it or not), or nothing for
 * UTC. A zone that is UTC at every instant (UTC, Etc/UTC, GMT) is UTC: null. An unknown name is a
 * 400 that names it.
 */
export function parseTimeZone (input: string | undefined): ZoneOffsets | null {
  const name = input?.trim() ?? ''
  if (name === '') return null
  // One entry a zone, whatever the case it was asked in: names are bounded by the IANA list, but
  // their spellings are not, and each entry holds the offsets of every year it was asked for.
  const key = name.toLowerCase()
  const known = zones.get(key)
  if (known !== undefined) return known
  if (!IANAZone.isValidZone(name)) {
    throw errors.badRequest(`timezone ${name.slice(0, 64)} is not a known IANA time zone (e.g. Europe/Madrid, America/New_York, UTC)`, { timezone: ['is not a known time zone'] })
  }
  const zone = IANAZone.create(name)
  const offsets = new ZoneOffsets(zone)
  // Always UTC: no zone to apply (checked over the years a reading can have).
  const universal = [0, Date.UTC(1990, 0, 1), Date.UTC(2020, 6, 1), Date.UTC(2050, 0, 1)].every((t) => zone.offset(t) === 0) && zone.name.match(/^(Etc\/)?(UTC|UCT|GMT|Universal|Zulu|Greenwich)(0|[+-]0)?$/i) !== null
  const result = universal ? null : offsets
  zones.set(key, result)
  return result
}

/**
 * The offsets (ms) whose shifted daily tiers serve these zones' days (ROLLUP_TIME_ZONES): those
 * they have had since 2000 and will have until 2040, as known now; an unknown zone is a 400.
 */
export function dayOffsetsOfZones (names: readonly string[]): number[] {
  const offsets = new Set<number>()
  for (const name of names) {
    const zone = parseTimeZone(name)
    for (const offset of zone?.offsetsBetween(Date.UTC(2000, 0, 1), Date.UTC(2040, 0, 1)) ?? [0]) offsets.add(offset)
  }
  return [...offsets].sort((a, b) => a - b)
}

/** ROLLUP_TIME_ZONES as offsets, or an error that names the unknown zone for the operator. */
export function rollupTimeZoneOffsets (setting: string): number[] {
  const names = setting.split(',').map((name) => name.trim()).filter((name) => name !== '')
  try {
    return dayOffsetsOfZones(names)
  } catch {
    const unknown = names.find((name) => !IANAZone.isValidZone(name)) ?? setting
    throw new Error(`ROLLUP_TIME_ZONES names ${unknown}, which is not a known IANA time zone (e.g. Europe/Madrid)`)
  }
}
