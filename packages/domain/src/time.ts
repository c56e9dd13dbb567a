/**
 * The one way timestamps leave the platform: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (contract).
 * Built from toISOString (always UTC) rather than a formatter: lists and rollups format thousands
 * of times per response, and this is a hot path.
 */
export function formatTimestamp (value: Date): string
export function formatTimestamp (value: Date | null | undefined): string | null
export function formatTimestamp (value: Date | null | undefined): string | null {
  if (value === null || value === undefined) return null
  const iso = value.toISOString()
  // Years outside 0000-9999 print with a sign and six digits; they keep the full ISO form.
  return iso.length === 24 ? `${iso.slice(0, 19)}Z` : iso
}

const DAY_MS = 86_400_000
let cachedDay = Number.NaN
let cachedDayPrefix = ''

/**
 * A reading's time from epoch milliseconds: the contract's form, with milliseconds only when the
 * reading has them (sub-second rollups, readings posted with them), or distinct times would print
 * as the same second. Exports format millions of times a day apart by minutes, so the date part
 * (`YYYY-MM-DDT`) of the last day seen is kept and only the clock time is built; another day costs
 * one toISOString, as it always did.
 */
export function formatReadingTime (ms: number): string {
  const into = ms - cachedDay
  if (!(into >= 0 && into < DAY_MS)) return formatNewDay(ms)
  const seconds = Math.floor(into / 1000)
  const fraction = into - seconds * 1000
  const clock = `${cachedDayPrefix}${pad2(Math.floor(seconds / 3600))}:${pad2(Math.floor(seconds / 60) % 60)}:${pad2(seconds % 60)}`
  return fraction === 0 ? `${clock}Z` : `${clock}.${pad3(fraction)}Z`
}

function formatNewDay (ms: number): string {
  const iso = new Date(ms).toISOString()
  // Years outside 0000-9999 print with a sign and six digits: no day is kept for them.
  if (iso.length !== 24) return iso
  cachedDay = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS)
  cachedDayPrefix = iso.slice(0, 11)
  return ms % 1000 === 0 ? `${iso.slice(0, 19)}Z` : iso
}

const pad2 = (n: number): string => n < 10 ? `0${n}` : String(n)
const pad3 = (n: number): string => n < 10 ? `00${n}` : n < 100 ? `0${n}` : String(n)

export type Clock = () => Date
export const systemClock: Clock = () => new Date()
