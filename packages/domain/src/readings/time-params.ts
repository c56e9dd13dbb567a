import { ApiError, errors } from '../errors.js'
import { recordId } from '../validation/record-id.js'
import { DAY_MS, daysFromCivil } from '../time.js'

/**
 * Time values that arrive from clients: the `from`/`to` query parameters of the readings history
 * (behaviour.md §7, clients.md §4.4) and `recorded_at` of posted readings (clients.md §4.20).
 */

interface DateTimeSyntax {
  /** `2015-07-28` alone, meaning midnight UTC */
  dateOnly: boolean
  /** `10:30` without seconds */
  optionalSeconds: boolean
  /** `+02:00` whose `+` a query string decoded to a space (pandas timestamps are sent unencoded) */
  spaceForPlus: boolean
}

const QUERY_SYNTAX: DateTimeSyntax = { dateOnly: true, optionalSeconds: true, spaceForPlus: true }
const RECORDED_AT_SYNTAX: DateTimeSyntax = { dateOnly: false, optionalSeconds: false, spaceForPlus: false }

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([-+ ])(\d{2})(?::?(\d{2}))?)?$/
const EPOCH_SECONDS = /^\d{1,11}$/

const MIN_QUERY_MS = Date.UTC(1970, 0, 1)
const MAX_QUERY_MS = Date.UTC(2201, 0, 1) - 1

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

function daysInMonth (year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
  return month === 2 && leap ? 29 : MONTH_DAYS[month - 1] ?? 0
}

function int (text: string | undefined): number {
  return text === undefined ? 0 : Number(text)
}

/** The value of the ASCII digits of `text` in [from, from + count), or -1 when one is not a digit. */
function digitsAt (text: string, from: number, count: number): number {
  let n = 0
  for (let i = from; i < from + count; i++) {
    const d = text.charCodeAt(i) - 48
    if (d < 0 || d > 9) return -1
    n = n * 10 + d
  }
  return n
}

/**
 * `YYYY-MM-DDTHH:MM:SSZ`, the form the contract prints and devices post, or with milliseconds
 * (`.sssZ`, JavaScript's toISOString), read without a regex or a Date: epoch ms, null when it is
 * that form but no real time (a 30 February), undefined when it is another form, which
 * parseDateTime then reads. Every posted value has a time to read.
 */
function canonicalInstant (text: string): number | null | undefined {
  const millis = text.length === 24 && text.charCodeAt(19) === 46 ? digitsAt(text, 20, 3) : text.length === 20 ? 0 : -1
  if (millis < 0 || text.charCodeAt(text.length - 1) !== 90 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return undefined
  const year = digitsAt(text, 0, 4)
  const month = digitsAt(text, 5, 2)
  const day = digitsAt(text, 8, 2)
  const hour = digitsAt(text, 11, 2)
  const minute = digitsAt(text, 14, 2)
  const second = digitsAt(text, 17, 2)
  if (year < 0 || minute < 0 || second < 0) return undefined
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour < 0 || hour > 23 || minute > 59 || second > 59) return null
  return daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000 + millis
}

/** The instant in epoch ms, or null when the text is not a real date and time in `syntax`. */
function parseDateTime (text: string, syntax: DateTimeSyntax): number | null {
  const dateOnly = syntax.dateOnly ? DATE.exec(text) : null
  const match = dateOnly ?? DATE_TIME.exec(text)
  if (match === null) return null
  const [, y, mo, d, h, mi, s, fraction, zulu, sign, oh, om] = match
  if (match !== dateOnly && s === undefined && !syntax.optionalSeconds) return null
  if (sign === ' ' && !syntax.spaceForPlus) return null
  const year = int(y)
  const month = int(mo)
  const day = int(d)
  const hour = int(h)
  const minute = int(mi)
  const second = int(s)
  const offsetHours = int(oh)
  const offsetMinutes = int(om)
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 23 || offsetMinutes > 59) return null
  // Dates carry milliseconds only: further digits are truncated, never rounded into the next second.
  const millis = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'))
  const date = new Date(0)
  // setUTCFullYear, unlike Date.UTC, does not map the years 0-99 to 1900-1999.
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, millis)
  const offsetMs = zulu !== undefined || sign === undefined ? 0 : (offsetHours * 60 + offsetMinutes) * 60_000
  return date.getTime() - (sign === '-' ? -offsetMs : offsetMs)
}

function badTimeParameter (name: 'from' | 'to'): ApiError {
  return new ApiError({
    code: 'ESP_BAD_TIME_PARAMETER',
    id: 'bad_request',
    statusCode: 400,
    message: `The ${name} parameter must be an ISO8601 format date or datetime or an integer number of seconds since the start of the UNIX epoch.`,
    errors: { [name]: ['is not a valid time'] }
  })
}

/**
 * `from` or `to` of the readings history. Zone-less values are UTC. The instant must fall in the
 * years 1970-2200 (UTC); the reference server answered 500 for epoch seconds, this one accepts them.
 */
export function parseTimeParam (name: 'from' | 'to', value: string | undefined): Date | undefined {
  const text = value?.trim() ?? ''
  if (text === '') return undefined
  const ms = EPOCH_SECONDS.test(text) ? Number(text) * 1000 : parseDateTime(text, QUERY_SYNTAX)
  if (ms === null || ms < MIN_QUERY_MS || ms > MAX_QUERY_MS) throw badTimeParameter(name)
  return new Date(ms)
}

/**
 * `to` of the readings history and the exports (issue 35): a time written without a fraction of a second means
 * through the end of that second, so that a time the platform printed (`last_reading_at`, to the
 * second) includes the reading it names, stored with its milliseconds; with a fraction it is
 * exact. The instant itself prints as it was given (formatTimestamp drops the milliseconds).
 */
export function parseToParam (value: string | undefined): Date | undefined {
  const at = parseTimeParam('to', value)
  if (at === undefined) return undefined
  const fraction = DATE_TIME.exec(value?.trim() ?? '')?.[7]
  return fraction === undefined ? new Date(at.getTime() + 999) : at
}

/**
 * A date or date and time as the query parameters take it (zone-less is UTC; `2026-11-25` is its
 * midnight): epoch ms, or null when it is not a real date and time (a 31 February, hour 24).
 */
export function parseQueryInstant (text: string): number | null {
  return parseDateTime(text, QUERY_SYNTAX)
}

/**
 * `recorded_at` of a posted reading: a date and a time to the second, optionally with a fraction
 * and a zone (UTC when absent). Null for anything else; the caller decides how to report it. No
 * range is imposed here: old backlogs are routine and the future bound belongs to the storer.
 */
export function parseRecordedAt (value: unknown): Date | null {
  if (typeof value !== 'string') return null
  const canonical = canonicalInstant(value)
  const ms = canonical === undefined ? parseDateTime(value.trim(), RECORDED_AT_SYNTAX) : canonical
  return ms === null ? null : new Date(ms)
}

/** The `sensor_id` query parameter of the readings history and the export: null when absent. */
export function parseSensorIdParam (value: string | undefined): number | null {
  if (value === undefined || value === '') return null
  const id = recordId(value)
  if (id === null) throw errors.badRequest('sensor_id must be a sensor id', { sensor_id: ['must be an integer'] })
  return id
}
