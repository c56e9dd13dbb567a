import type { Viewer } from '../auth/viewer.js'
import { errors } from '../errors.js'
import { formatTimestamp } from '../time.js'
import { nextTurn } from '../turns.js'
import { type AreaContext, type AreaParams, areaValues, type AreaValues, measuredFields } from './area-values.js'

/*
 * GET /v0/readings/statistics: per window, statistics across the devices' own window values (each
 * device weighs one, whatever it reports), exact where the per-device value is (every function
 * merges from the tiers), and order statistics from the values themselves.
 */

export interface StatisticsParams extends AreaParams {
  /** numbers in [0, 100] separated by commas */
  percentiles?: string | undefined
  /** `true`: each window lists every device's value */
  per_device?: string | undefined
}

export const MAX_PERCENTILES = 20
/** With per_device=true, the most device windows one answer lists (the history's most values of one request). */
export const MAX_LISTED_VALUES = 200_000

/** The percentiles asked for, in the order asked, each in [0, 100]. */
export function parsePercentiles (text: string | undefined): number[] {
  const items = (text ?? '').split(',').map((item) => item.trim()).filter((item) => item !== '')
  if (items.length > MAX_PERCENTILES) throw errors.badRequest(`percentiles lists ${items.length} numbers; at most ${MAX_PERCENTILES}`, { percentiles: [`has more than ${MAX_PERCENTILES} items`] })
  return items.map((item) => {
    const p = /^\d{1,3}(\.\d{1,6})?$/.test(item) ? Number(item) : NaN
    if (!(p >= 0 && p <= 100)) throw errors.badRequest('percentiles must be numbers from 0 to 100 separated by commas, e.g. percentiles=10,90', { percentiles: [`${item.slice(0, 20)} is not a number from 0 to 100`] })
    return p
  })
}

/**
 * Moves the k-th smallest of a[lo..hi] to a[k], none larger before it and none smaller after
 * (Hoare's selection): an order statistic in linear time, where sorting every window's values
 * cost most of a month of hours over a thousand devices.
 */
function select (a: Float64Array, k: number, lo: number, hi: number): void {
  while (hi > lo) {
    const x = a[lo] as number
    const y = a[(lo + hi) >>> 1] as number
    const z = a[hi] as number
    const pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y)
    let i = lo
    let j = hi
    while (i <= j) {
      while ((a[i] as number) < pivot) i++
      while ((a[j] as number) > pivot) j--
      if (i <= j) {
        const t = a[i] as number
        a[i] = a[j] as number
        a[j] = t
        i++
        j--
      }
    }
    if (k <= j) hi = j
    else if (k >= i) lo = i
    else return
  }
}

/** The fractions in ascending order, each with its place among those asked. */
const ascending = (qs: readonly number[]): Array<{ q: number, i: number }> => qs.map((q, i) => ({ q, i })).sort((x, y) => x.q - y.q)

/**
 * The values at fractions `qs` of the first `n` values of `a` (reordered in place), each as
 * quantile() gives it of the sorted values: the order statistics asked for, in ascending order,
 * each selection within what the one before left above it.
 */
export function quantilesOf (a: Float64Array, n: number, qs: readonly number[], order: ReadonlyArray<{ q: number, i: number }> = ascending(qs)): number[] {
  const out = new Array<number>(qs.length)
  let left = 0
  for (const { q, i } of order) {
    const h = (n - 1) * q
    const k = Math.floor(h)
    select(a, k, left, n - 1)
    left = k
    const below = a[k] as number
    if (h === k || k + 1 >= n) { out[i] = below; continue }
    // The next order statistic is the smallest of those above k.
    let above = Infinity
    for (let m = k + 1; m < n; m++) if ((a[m] as number) < above) above = a[m] as number
    out[i] = below + (h - k) * (above - below)
  }
  return out
}

const num = (value: number): string => String(value)

/** The side of a square of the transposed values that stays in the cache. */
const TILE = 64

/** Windows summarized between turns of the event loop. */
const WINDOWS_PER_SLICE = 2_000

/** The answer's JSON, written from the values' columns: newest window first. */
export async function statisticsJson (area: AreaValues, percentiles: readonly number[], perDevice: boolean): Promise<Buffer> {
  const { devices, windows, values } = area
  const width = windows.length
  const head = JSON.stringify({
    ...measuredFields(area.measured),
    rollup: area.rollup.text,
    function: area.fn,
    timezone: area.rollup.zone?.name ?? 'UTC',
    from: formatTimestamp(area.from),
    to: formatTimestamp(area.to),
    percentiles
  })
  // By window, each window's devices side by side: read by device (a row each) the walk below
  // missed the cache at every value. Transposed in tiles that stay in it.
  const count = devices.length
  const byWindow = new Float64Array(values.length)
  for (let d0 = 0; d0 < count; d0 += TILE) {
    for (let w0 = 0; w0 < width; w0 += TILE) {
      for (let d = d0; d < Math.min(count, d0 + TILE); d++) {
        for (let w = w0; w < Math.min(width, w0 + TILE); w++) byWindow[w * count + d] = values[d * width + w] as number
      }
    }
  }
  const fractions = [0.5, ...percentiles.map((p) => p / 100)]
  const order = ascending(fractions)
  const withValue = new Uint8Array(devices.length)
  const column = new Float64Array(devices.length)
  const ids = new Array<number>(devices.length)
  const parts: string[] = []
  for (let w = width - 1, done = 0; w >= 0; w--, done++) {
    if (done > 0 && done % WINDOWS_PER_SLICE === 0) await nextTurn()
    let n = 0
    for (let d = 0; d < devices.length; d++) {
      const value = byWindow[w * count + d] as number
      if (Number.isNaN(value)) continue
      withValue[d] = 1
      column[n] = value
      ids[n] = devices[d]?.deviceId as number
      n++
    }
    if (n === 0) continue
    let listed = ''
    if (perDevice) {
      const pairs: string[] = []
      for (let i = 0; i < n; i++) pairs.push(`[${ids[i] as number},${num(column[i] as number)}]`)
      listed = `,"values":[${pairs.join(',')}]`
    }
    let sum = 0
    let min = Infinity
    let max = -Infinity
    for (let i = 0; i < n; i++) {
      const value = column[i] as number
      sum += value
      if (value < min) min = value
      if (value > max) max = value
    }
    const mean = sum / n
    let squares = 0
    for (let i = 0; i < n; i++) squares += ((column[i] as number) - mean) ** 2
    const sd = n < 2 ? 'null' : num(Math.sqrt(squares / (n - 1)))
    const [median, ...asked] = quantilesOf(column, n, fractions, order)
    parts.push(`{"time":"${formatTimestamp(new Date(windows[w] as number))}","devices":${n},"mean":${num(mean)},"sd":${sd},"min":${num(min)},"max":${num(max)},"median":${num(median as number)},"percentiles":[${asked.map(num).join(',')}]${listed}}`)
  }
  let counted = 0
  for (let d = 0; d < devices.length; d++) counted += withValue[d] as number
  return Buffer.from(`${head.slice(0, -1)},"devices":${counted},"windows":[${parts.join(',')}]}`)
}

/** GET /v0/readings/statistics, as JSON bytes. */
export async function areaStatistics (ctx: AreaContext, viewer: Viewer | null, params: StatisticsParams): Promise<Buffer> {
  const percentiles = parsePercentiles(params.percentiles)
  const perDevice = params.per_device === 'true' || params.per_device === '1'
  // Each device's value of each window is written out: as many as the history answers at most.
  const area = await areaValues(ctx, viewer, params, perDevice ? { maxDeviceWindows: MAX_LISTED_VALUES } : {})
  return await statisticsJson(area, percentiles, perDevice)
}
