import type { History } from './types.js'

/** One sensor's buckets as a chart draws them. */
export interface Series {
  /** bucket starts, seconds since the epoch, ascending */
  times: number[]
  /** null where a bucket has no readings: drawn as a gap */
  values: (number | null)[]
}

export type RangeName = 'day' | 'week' | 'month' | 'year' | 'custom'

export const RANGES: { name: Exclude<RangeName, 'custom'>, label: string, seconds: number }[] = [
  { name: 'day', label: 'Last day', seconds: 86_400 },
  { name: 'week', label: 'Last week', seconds: 7 * 86_400 },
  { name: 'month', label: 'Last month', seconds: 30 * 86_400 },
  { name: 'year', label: 'Last year', seconds: 365 * 86_400 }
]

/** Rollups a person may choose, smallest first, with their length for the automatic choice. */
export const ROLLUPS: { value: string, label: string, seconds: number }[] = [
  { value: '1m', label: '1 minute', seconds: 60 },
  { value: '5m', label: '5 minutes', seconds: 300 },
  { value: '15m', label: '15 minutes', seconds: 900 },
  { value: '1h', label: '1 hour', seconds: 3600 },
  { value: '6h', label: '6 hours', seconds: 21_600 },
  { value: '1d', label: '1 day', seconds: 86_400 },
  { value: '1w', label: '1 week', seconds: 604_800 },
  { value: '1M', label: '1 month', seconds: 2_592_000 }
]

export const FUNCTIONS = ['avg', 'min', 'max', 'sum', 'count', 'dev', 'first', 'last'] as const

/** At most this many buckets drawn when the rollup is automatic: a day by 5 minutes, a year by days. */
const AUTO_BUCKETS = 800

/** A rollup chosen by hand gives way to the automatic one past this many buckets of a range, or under two. */
const MAX_CHOSEN_BUCKETS = 5_000

/**
 * The automatic rollup of a range: at most AUTO_BUCKETS buckets, and never finer than the device
 * reports (`reportingSeconds`), since buckets finer than its readings leave every value between
 * empty ones, and a line needs two neighbours.
 */
export function autoRollup (seconds: number, reportingSeconds = 0): string {
  return (ROLLUPS.find((r) => seconds / r.seconds <= AUTO_BUCKETS && r.seconds >= reportingSeconds) ?? ROLLUPS[ROLLUPS.length - 1]!).value
}

/** A rollup chosen for one range that makes no chart of another (a year's weeks for a day): automatic again. */
export function rollupForRange (rollup: string, seconds: number): string {
  const chosen = ROLLUPS.find((r) => r.value === rollup)
  if (chosen === undefined) return 'auto'
  const buckets = seconds / chosen.seconds
  return buckets > MAX_CHOSEN_BUCKETS || buckets < 2 ? 'auto' : rollup
}

/**
 * How often a device reports, as its series show it (seconds): the median step between buckets
 * that hold a value, the longest over the series; null when none has two values.
 */
export function reportingStep (series: Iterable<Series>): number | null {
  let step: number | null = null
  for (const s of series) {
    const gaps: number[] = []
    let previous: number | null = null
    for (let i = 0; i < s.times.length; i++) {
      if (s.values[i] === null) continue
      const at = s.times[i]!
      if (previous !== null) gaps.push(at - previous)
      previous = at
    }
    if (gaps.length === 0) continue
    gaps.sort((a, b) => a - b)
    const median = gaps[Math.floor(gaps.length / 2)]!
    step = step === null ? median : Math.max(step, median)
  }
  return step
}

/** The API answers newest first; a chart wants oldest first, times in seconds. */
export function toSeries (history: History): Series {
  const n = history.readings.length
  const times = new Array<number>(n)
  const values = new Array<number | null>(n)
  for (let i = 0; i < n; i++) {
    const [at, value] = history.readings[n - 1 - i]!
    times[i] = Date.parse(at) / 1000
    values[i] = value
  }
  return { times, values }
}

/** A whole-second ISO time, as the contract writes them. */
export const isoSeconds = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')

/** The indices of values with no value on either side: no line reaches them. */
export function isolatedPoints (values: ReadonlyArray<number | null | undefined>): number[] {
  const found: number[] = []
  for (let i = 0; i < values.length; i++) {
    if (values[i] == null) continue
    if (values[i - 1] == null && values[i + 1] == null) found.push(i)
  }
  return found
}
