import { DateTime } from 'luxon'
import { errors } from '../errors.js'
import type { ZoneOffsets } from './zone.js'

/**
 * The `rollup` parameter of `GET /devices/:id/readings` (behaviour.md §7, clients.md §4.5) and the
 * bucket arithmetic shared by the query engines and their reference implementation.
 */
export type RollupUnit = 'y' | 'M' | 'w' | 'd' | 'h' | 'm' | 's' | 'ms'

export interface Rollup {
  /** the parameter as sent, without surrounding whitespace */
  text: string
  value: number
  unit: RollupUnit
  /** value 0: every reading is returned as it is, nothing is bucketed */
  raw: boolean
  /** bucket length for the fixed-length units; null for months and years */
  fixedMs: number | null
  /**
   * The time zone whose wall clock the buckets follow (the `timezone` parameter), for hours and
   * longer; absent for UTC. Days then start at local midnight and last 23 or 25 hours across a
   * change of the clocks; weeks on the local Monday; times in the answer stay UTC.
   */
  zone?: ZoneOffsets
}

export type RollupSql =
  | { kind: 'bin', interval: string, origin: string }
  | { kind: 'trunc', field: 'month' | 'year', value: number }
  | { kind: 'raw' }

type FixedUnit = Exclude<RollupUnit, 'M' | 'y'>

const DAY_MS = 86_400_000
const UNIT_MS: Record<FixedUnit, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: DAY_MS, w: 7 * DAY_MS }

const EPOCH_ORIGIN = '1970-01-01T00:00:00.000Z'
// Weeks start on Mondays, and the epoch was a Thursday.
const WEEK_ORIGIN = '1970-01-05T00:00:00.000Z'
const WEEK_ORIGIN_MS = 4 * DAY_MS

// Case matters: M is months and m minutes, as in KairosDB's units.
const ROLLUP_PATTERN = /^(\d{1,9})(ms|y|M|w|d|h|m|s)$/

/*
 * Nine digits allow rollups such as 999999999d, whose buckets reach outside the range of a JS Date
 * and of PostgreSQL timestamps, or overflow its 64-bit microsecond interval arithmetic: a bad
 * parameter would become a 500. A millennium is far beyond the platform's whole time range and
 * keeps even the bucket before an origin (times before 1970) well inside both ranges.
 */
const MAX_BUCKET_YEARS = 1000
const MAX_FIXED_MS = Math.round(MAX_BUCKET_YEARS * 365.2425 * DAY_MS)

const invalidRollup = () =>
  errors.badRequest('rollup must be an integer followed by one of y, M, w, d, h, m, s, ms (e.g. 1h, 10m, 1d)', { rollup: ['is invalid'] })

function isFixed (unit: RollupUnit): unit is FixedUnit {
  return unit !== 'M' && unit !== 'y'
}

export function parseRollup (input: string | undefined): Rollup {
  const text = input?.trim() ?? ''
  // Rails' params.require treats a blank value like a missing one.
  if (text === '') throw errors.parameterMissing(['rollup'])
  const match = ROLLUP_PATTERN.exec(text)
  if (match === null) throw invalidRollup()
  const value = Number(match[1])
  const unit = match[2] as RollupUnit
  const fixedMs = isFixed(unit) ? value * UNIT_MS[unit] : null
  const months = unit === 'M' ? value : unit === 'y' ? value * 12 : 0
  if ((fixedMs ?? 0) > MAX_FIXED_MS || months > MAX_BUCKET_YEARS * 12) {
    throw errors.badRequest(`rollup must not be longer than ${MAX_BUCKET_YEARS} years`, { rollup: ['is too long'] })
  }
  return { text, value, unit, raw: value === 0, fixedMs }
}

function timeOf (at: Date): number {
  const t = at.getTime()
  // An invalid date would make every loop over buckets run forever or not at all.
  if (Number.isNaN(t)) throw new RangeError('invalid date')
  return t
}

/** Months (or years) since 1970-01, the calendar analogue of epoch milliseconds. */
function calendarIndex (t: number, unit: 'M' | 'y'): number {
  const date = new Date(t)
  const years = date.getUTCFullYear() - 1970
  return unit === 'y' ? years : years * 12 + date.getUTCMonth()
}

function fromCalendarIndex (index: number, unit: 'M' | 'y'): Date {
  const months = unit === 'y' ? index * 12 : index
  const date = new Date(0)
  // setUTCFullYear, unlike Date.UTC, does not map the years 0-99 to 1900-1999.
  date.setUTCFullYear(1970 + Math.floor(months / 12), ((months % 12) + 12) % 12, 1)
  return date
}

/** The start of the bucket holding `at`: PostgreSQL `date_bin` semantics for the fixed units. */
export function bucketStart (at: Date, rollup: Rollup): Date {
  return new Date(bucketStartMs(timeOf(at), rollup))
}

/** bucketStart of an instant in epoch ms (a valid one), in epoch ms: no Date a reading. */
export function bucketStartMs (t: number, rollup: Rollup): number {
  const zone = rollup.zone
  // The wall clock's bucket, then the instant that wall time is.
  if (zone !== undefined) return zone.utcOf(clockBucketStart(t + zone.offsetMs(t), rollup))
  return clockBucketStart(t, rollup)
}

/** Bucket arithmetic on a clock that has no changes: UTC, or a zone's wall time read as UTC. */
function clockBucketStart (t: number, rollup: Rollup): number {
  if (rollup.raw) return t
  if (rollup.fixedMs !== null) {
    const origin = rollup.unit === 'w' ? WEEK_ORIGIN_MS : 0
    // Integer remainder is exact where floor(a / b) in floating point can round up at a boundary.
    const offset = (t - origin) % rollup.fixedMs
    return offset < 0 ? t - offset - rollup.fixedMs : t - offset
  }
  const unit = rollup.unit === 'y' ? 'y' : 'M'
  const index = calendarIndex(t, unit)
  return fromCalendarIndex(Math.floor(index / rollup.value) * rollup.value, unit).getTime()
}

/** `start` plus one bucket; a raw rollup steps by the smallest representable time, 1 ms. */
export function nextBucket (start: Date, rollup: Rollup): Date {
  const t = timeOf(start)
  const zone = rollup.zone
  if (zone !== undefined) {
    // From the wall-clock start of the bucket (a skipped midnight starts the day at 01:00).
    const local = clockBucketStart(t + zone.offsetMs(t), rollup)
    return new Date(zone.utcOf(nextClockBucket(local, rollup)))
  }
  return new Date(nextClockBucket(t, rollup))
}

function nextClockBucket (t: number, rollup: Rollup): number {
  if (rollup.raw) return t + 1
  if (rollup.fixedMs !== null) return t + rollup.fixedMs
  const unit = rollup.unit === 'y' ? 'y' : 'M'
  // From a bucket's start (the usual case) by calendar arithmetic: luxon's plus() cost about
  // 80 µs a call, a long range of months ran into hundreds of milliseconds.
  const index = calendarIndex(t, unit)
  if (fromCalendarIndex(index, unit).getTime() === t) return fromCalendarIndex(index + rollup.value, unit).getTime()
  const utc = DateTime.fromMillis(t, { zone: 'utc' })
  return (rollup.unit === 'y' ? utc.plus({ years: rollup.value }) : utc.plus({ months: rollup.value })).toMillis()
}

/** How many buckets intersect [from, to]; 0 when `to` is before `from`. */
export function countBuckets (from: Date, to: Date, rollup: Rollup): number {
  const start = timeOf(from)
  const end = timeOf(to)
  if (end < start) return 0
  if (rollup.raw) return end - start + 1
  // In a zone, counted on the wall clock: an hour the clocks skip still counts (at most one more
  // than there are, per change of the clocks), which is what a bound needs.
  const zone = rollup.zone
  const first = clockBucketStart(zone === undefined ? start : start + zone.offsetMs(start), rollup)
  const last = clockBucketStart(zone === undefined ? end : end + zone.offsetMs(end), rollup)
  if (rollup.fixedMs !== null) return (last - first) / rollup.fixedMs + 1
  const unit = rollup.unit === 'y' ? 'y' : 'M'
  return (calendarIndex(last, unit) - calendarIndex(first, unit)) / rollup.value + 1
}

/** Every bucket start whose bucket intersects [from, to], ascending; null when over `limit`. */
export function bucketStartsBetween (from: Date, to: Date, rollup: Rollup, limit: number): Date[] | null {
  const count = countBuckets(from, to, rollup)
  // Written so that a NaN limit refuses instead of allowing everything.
  if (!(count <= limit)) return null
  const starts: Date[] = []
  const end = timeOf(to)
  // Up to `to` rather than `count` times: in a zone the count may include an hour the clocks skip.
  for (let start = bucketStart(from, rollup); start.getTime() <= end && starts.length < count; start = nextBucket(start, rollup)) starts.push(start)
  return starts
}

function intervalText (ms: number): string {
  // Whole days go in the day field: PostgreSQL before 15 read each interval field as a 32-bit
  // integer, so 30 days written in milliseconds would overflow there.
  const days = Math.floor(ms / DAY_MS)
  const rest = ms - days * DAY_MS
  const parts: string[] = []
  if (days > 0) parts.push(`${days} days`)
  if (rest > 0 || days === 0) parts.push(`${rest} milliseconds`)
  return parts.join(' ')
}

/**
 * How SQL buckets this rollup. `bin`: `date_bin(interval::interval, t, origin::timestamptz)`.
 * `trunc`: months (or years) since 1970-01 in UTC, floored to a multiple of `value`.
 * `raw`: no bucketing, every row is its own point.
 */
/**
 * The rollup on the wall clock of a zone (none: UTC). Minutes and shorter are the same in every
 * zone of the tz database since 1970 (offsets are whole minutes), so only hours and longer change.
 */
export function inZone (rollup: Rollup, zone: ZoneOffsets | null): Rollup {
  if (zone === null || rollup.raw || rollup.unit === 'ms' || rollup.unit === 's' || rollup.unit === 'm') return rollup
  return { ...rollup, zone }
}

export function rollupSql (rollup: Rollup): RollupSql {
  if (rollup.raw) return { kind: 'raw' }
  if (rollup.unit === 'w') return { kind: 'bin', interval: `${7 * rollup.value} days`, origin: WEEK_ORIGIN }
  if (rollup.fixedMs !== null) return { kind: 'bin', interval: intervalText(rollup.fixedMs), origin: EPOCH_ORIGIN }
  return { kind: 'trunc', field: rollup.unit === 'y' ? 'year' : 'month', value: rollup.value }
}
