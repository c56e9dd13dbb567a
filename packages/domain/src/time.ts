/**
 * The one way timestamps leave the platform: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (contract).
 * The second the time falls in, through formatReadingTime: a page of devices formats hundreds of
 * times, mostly of one day, and a toISOString each was 7 % of such a request (a profile of
 * `GET /v0/devices`). Years outside 0000-9999 keep toISOString's long form (of the whole second).
 */
export function formatTimestamp (value: Date): string
export function formatTimestamp (value: Date | null | undefined): string | null
export function formatTimestamp (value: Date | null | undefined): string | null {
  if (value === null || value === undefined) return null
  const ms = value.getTime()
  // An invalid Date throws as its toISOString does.
  if (Number.isNaN(ms)) return value.toISOString()
  return formatReadingTime(ms - (((ms % 1000) + 1000) % 1000))
}

export const DAY_MS = 86_400_000
let cachedDay = Number.NaN
let cachedDayPrefix = ''

/**
 * A reading's time from epoch milliseconds: the contract's form, with milliseconds only when the
 * reading has them (sub-second rollups, readings posted with them), or distinct times would print
 * as the same second. Exports format millions of times a day apart by minutes, so the date part
 * (`YYYY-MM-DDT`) of the last day seen is kept and only the clock time is built.
 */
export function formatReadingTime (ms: number): string {
  const into = ms - cachedDay
  if (!(into >= 0 && into < DAY_MS)) return formatNewDay(ms)
  const seconds = Math.floor(into / 1000)
  const fraction = into - seconds * 1000
  const clock = `${cachedDayPrefix}${pad2(Math.floor(seconds / 3600))}:${pad2(Math.floor(seconds / 60) % 60)}:${pad2(seconds % 60)}`
  return fraction === 0 ? `${clock}Z` : `${clock}.${pad3(fraction)}Z`
}

/** 0000-01-01 and 10000-01-01 in epoch milliseconds: the years the contract's form prints with four digits */
const FOUR_DIGIT_YEARS_FROM = -62_167_219_200_000
const FOUR_DIGIT_YEARS_UNTIL = 253_402_300_800_000

function formatNewDay (ms: number): string {
  const prefix = readingDatePrefix(ms)
  // Years outside 0000-9999 print with a sign and six digits: no day is kept for them.
  if (prefix === null) return new Date(ms).toISOString()
  cachedDay = Math.floor(ms / DAY_MS) * DAY_MS
  cachedDayPrefix = prefix
  return formatReadingTime(ms)
}

/**
 * The `YYYY-MM-DDT` that formatReadingTime prints for `ms`, or null outside the years 0000-9999,
 * which print in toISOString's long form.
 */
export function readingDatePrefix (ms: number): string | null {
  return ms >= FOUR_DIGIT_YEARS_FROM && ms < FOUR_DIGIT_YEARS_UNTIL ? datePrefix(Math.floor(ms / DAY_MS)) : null
}

/**
 * `YYYY-MM-DDT` of a day counted from 1970-01-01, by the proleptic Gregorian calendar as
 * toISOString prints it (H. Hinnant's civil_from_days): a year of daily buckets is 365 new days,
 * and a Date and its toISOString for each was a tenth of such a request.
 */
function datePrefix (day: number): string {
  const z = day + 719_468
  const era = Math.floor(z / 146_097)
  const dayOfEra = z - era * 146_097
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365)
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100))
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153)
  const dayOfMonth = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
  return `${String(year).padStart(4, '0')}-${pad2(month)}-${pad2(dayOfMonth)}T`
}

/**
 * Days from 1970-01-01 to a proleptic Gregorian date (H. Hinnant's days_from_civil), the inverse of
 * datePrefix's calendar: timestamps posted by the thousand become epoch numbers without a Date.
 */
export function daysFromCivil (year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146_097 + dayOfEra - 719_468
}

const pad2 = (n: number): string => n < 10 ? `0${n}` : String(n)
const pad3 = (n: number): string => n < 10 ? `00${n}` : n < 100 ? `0${n}` : String(n)

export type Clock = () => Date
export const systemClock: Clock = () => new Date()
