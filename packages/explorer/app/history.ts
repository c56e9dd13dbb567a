import type { History } from './types.js'
import type { Series } from './chart.js'

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

export function autoRollup (seconds: number): string {
  return (ROLLUPS.find((r) => seconds / r.seconds <= AUTO_BUCKETS) ?? ROLLUPS[ROLLUPS.length - 1]!).value
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
