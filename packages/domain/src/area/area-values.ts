import { type AreaDevice, areaDevices, type BucketStates, type DeviceSensor, type Handle, type MeasuredBy, measuredExists, rawPairsOfDevices, type Tier, tierStatesOfDevices, tierValuesOfDevices, visibleActiveDeviceIds, type WindowValues } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { visibility } from '../devices/device-access.js'
import { errors } from '../errors.js'
import { parseDeviceSelection } from '../exports/export-selection.js'
import type { ClosedDays } from './closed-days.js'
import type { RollupFunction } from '../readings/aggregate-state.js'
import { foldPairs } from '../readings/fold-pairs.js'
import type { HistoryContext, HistoryParams } from '../readings/history-context.js'
import { foldParts, historyRequest, type ReadPart, readPart, readPlan } from '../readings/history.js'
import { bucketStart, countBuckets, nextBucket, type Rollup } from '../readings/rollup.js'
import { bucketBounds, type ReadWindow } from '../readings/window.js'
import { recordId } from '../validation/record-id.js'

/*
 * Each selected device's value in each window of a rollup, read as its own history would be (the
 * same plan, tiers and raw edges, the same fold), a thousand devices at a time: what an area's
 * statistics and its interpolated grid are computed from.
 */

/** What every area request takes: what is measured, which devices, and the windows. */
export interface AreaParams extends Pick<HistoryParams, 'rollup' | 'function' | 'from' | 'to' | 'timezone'> {
  measurement_id?: string | undefined
  sensor_id?: string | undefined
  sensor_key?: string | undefined
  device_ids?: string | undefined
  with_tags?: string | undefined
  bbox?: string | undefined
  exposure?: string | undefined
}

export interface AreaContext extends HistoryContext {
  /** where the selection is read (a replica for anonymous reads, as other reads) */
  database: Handle
  /** the most (device, window) values one request reads */
  maxDeviceWindows: number
  /** closed days of hourly values kept by this process (none on the timescale engine: see the route) */
  closedDays?: ClosedDays | undefined
}

/**
 * Reading a tier value costs a small part of what answering one does (the history's rate unit):
 * an area request pays a rate unit per this many device windows.
 */
export const DEVICE_WINDOWS_PER_RATE_UNIT = 20_000

/** The most (device, window) values one area request reads: 16 MB of numbers. */
export const AREA_MAX_DEVICE_WINDOWS = 2_000_000

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000
const HOURS_A_DAY = 24

/** Keeps each whole UTC day of `read` (hourly values read from `readFrom`) that ends by `closedUntil`. */
function keepClosedDays (keep: ClosedDays, key: string, revision: number, read: WindowValues, readFrom: number, closedUntil: number): void {
  let b = 0
  for (let day = Math.ceil(readFrom / DAY_MS) * DAY_MS; day + DAY_MS <= closedUntil; day += DAY_MS) {
    const hours = new Float64Array(HOURS_A_DAY).fill(NaN)
    while (b < read.starts.length && (read.starts[b] as number) < day) b++
    for (; b < read.starts.length && (read.starts[b] as number) < day + DAY_MS; b++) hours[((read.starts[b] as number) - day) / HOUR_MS] = read.values[b] as number
    keep.keep(key, revision, day, hours)
  }
}

/** The most raw readings of a device one statement for many devices reads: a piece with more is read on its own. */
const RAW_PAIRS_PER_DEVICE = 2_000

/** Devices read side by side in one statement of a tier. */
const DEVICES_PER_READ = 250

/** The values of every device in every window, and the windows' starts. */
export interface AreaValues {
  measured: MeasuredBy
  rollup: Rollup
  fn: RollupFunction
  from: Date
  to: Date
  devices: AreaDevice[]
  /** every window's start of [from, to] (clamped to the newest reading), ascending */
  windows: number[]
  /** devices.length × windows.length, by device then window; NaN where a device has no value */
  values: Float64Array
}

/** The measurement, sensor or key asked for: exactly one. */
export function parseMeasured (params: AreaParams): MeasuredBy {
  const given = (['measurement_id', 'sensor_id', 'sensor_key'] as const).filter((name) => (params[name] ?? '').trim() !== '')
  if (given.length === 0) throw errors.parameterMissing(['measurement_id OR sensor_id OR sensor_key'])
  if (given.length > 1) throw errors.badRequest('give one of measurement_id, sensor_id and sensor_key', Object.fromEntries(given.map((name) => [name, ['only one of measurement_id, sensor_id and sensor_key']])))
  const name = given[0] as 'measurement_id' | 'sensor_id' | 'sensor_key'
  const text = (params[name] ?? '').trim()
  if (name === 'sensor_key') return { sensorKey: text }
  const id = recordId(text)
  if (id === null) throw errors.badRequest(`${name} must be an id`, { [name]: ['must be an integer'] })
  return name === 'measurement_id' ? { measurementId: id } : { sensorId: id }
}

/** The echo of what is measured, as the answer names it. */
export const measuredFields = (measured: MeasuredBy): { measurement_id: number | null, sensor_id: number | null, sensor_key: string | null } => ({
  measurement_id: 'measurementId' in measured ? measured.measurementId : null,
  sensor_id: 'sensorId' in measured ? measured.sensorId : null,
  sensor_key: 'sensorKey' in measured ? measured.sensorKey : null
})

/** The windows an area request reads, parsed. */
export interface AreaRequest { rollup: Rollup, fn: RollupFunction, from: Date, to: Date }

/** A device to read and its sensor, and its newest reading (no window after it holds a value). */
export type AreaSource = Pick<AreaDevice, 'deviceId' | 'sensorId' | 'lastReadingAt'> & { historyRevision?: number | null }

/**
 * Every selected device's value in every window. Parsed and bounded before anything is read: the
 * windows are counted over the range (ended at the selection's newest reading), and devices ×
 * windows past `maxDeviceWindows` is a 400; the caller's rate limit is charged for them. A device
 * named by id that the viewer may not see is the 404 of a missing device, as in the exports.
 */
export async function areaValues (ctx: AreaContext, viewer: Viewer | null, params: AreaParams, options: { maxWindows?: number, maxDeviceWindows?: number } = {}): Promise<AreaValues> {
  const measured = parseMeasured(params)
  const selection = parseDeviceSelection(params)
  const request = historyRequest(ctx, params, false, 'rollup')
  if (request.rollup.raw) throw errors.badRequest('rollup must be a window (e.g. 1h, 1d): an area is summarized per window', { rollup: ['must not be 0 of any unit'] })
  const v = visibility(viewer)
  const [devices, named, known] = await Promise.all([
    areaDevices(ctx.database, v, selection, measured),
    selection.ids === null ? null : visibleActiveDeviceIds(ctx.database, selection.ids, v),
    measuredExists(ctx.database, measured)
  ])
  if (named !== null) {
    const seen = new Set(named)
    const missing = selection.ids?.find((id) => !seen.has(id))
    if (missing !== undefined) throw errors.notFound('Device', missing)
  }
  if (!known) throw errors.notFound('measurementId' in measured ? 'Measurement' : 'Sensor', 'measurementId' in measured ? measured.measurementId : 'sensorId' in measured ? measured.sensorId : '')
  const read = await readAreaValues(ctx, devices, request, { maxWindows: options.maxWindows ?? ctx.maxBuckets, maxDeviceWindows: Math.min(ctx.maxDeviceWindows, options.maxDeviceWindows ?? Infinity) }, ctx.closedDays)
  return { measured, devices, ...request, ...read }
}

/**
 * The devices' values in every window of the request, counted and charged (ctx.charge) before
 * anything is read: the database part of an area request, on any engine (a Runner).
 */
export async function readAreaValues (ctx: HistoryContext, devices: readonly AreaSource[], request: AreaRequest, limits: { maxWindows: number, maxDeviceWindows: number }, keep?: ClosedDays): Promise<{ windows: number[], values: Float64Array }> {
  const { rollup, fn, from, to } = request
  // No window after the newest reading of the selection holds a value: the range ends with the
  // window that holds it (its end, so that a tier still serves the last window whole).
  const newest = devices.reduce((at, d) => Math.max(at, d.lastReadingAt?.getTime() ?? -Infinity), -Infinity)
  const newestWindowEnd = newest === -Infinity ? -Infinity : nextBucket(bucketStart(new Date(newest), rollup), rollup).getTime() - 1
  const readTo = new Date(Math.min(to.getTime(), newestWindowEnd))
  const windowCount = newest === -Infinity || readTo < from ? 0 : countBuckets(from, readTo, rollup)
  if (windowCount > limits.maxWindows) {
    throw errors.badRequest(`This request spans ${windowCount} windows of ${rollup.text}; at most ${limits.maxWindows} are answered at once. Ask for a larger rollup or a shorter from/to range.`, { rollup: [`gives ${windowCount} windows, more than ${limits.maxWindows}`] })
  }
  if (devices.length * windowCount > limits.maxDeviceWindows) {
    throw errors.badRequest(`This request reads ${devices.length * windowCount} values (${devices.length} devices over ${windowCount} windows of ${rollup.text}); at most ${limits.maxDeviceWindows} are read at once. Select fewer devices (a smaller bbox, tags), a larger rollup or a shorter from/to range.`, { rollup: [`gives ${devices.length * windowCount} device windows, more than ${limits.maxDeviceWindows}`] })
  }
  await ctx.charge?.(devices.length * windowCount)
  if (windowCount === 0 || devices.length === 0) return { windows: [], values: new Float64Array(0) }
  const windows = (await bucketBounds(from, readTo.getTime(), rollup, windowCount + 2)).slice(0, -1)
  const window: ReadWindow = { from, to: readTo, empty: false, perSeries: windowCount }
  const plan = await readPlan(ctx, rollup, window)
  const values = new Float64Array(devices.length * windows.length).fill(NaN)
  // A tier whose bucket is the window itself (1h from hours, 1d from days, in UTC; hours on a
  // whole-hour zone's clock are UTC hours): each row is a finished window value.
  const wholeWindows = (tier: Tier): boolean => rollup.fixedMs === tier.ms && tier.offsetMinutes === undefined && (rollup.zone === undefined || rollup.unit === 'h')

  // A chunk of devices at a time: its tier pieces read together, its other pieces device by device,
  // then each device folded into its windows and its states dropped.
  const readChunk = async (start: number): Promise<void> => {
    const chunk = devices.slice(start, start + DEVICES_PER_READ)
    const pairs = chunk.map((d) => ({ deviceId: d.deviceId, sensorId: d.sensorId }))
    const parts: ReadPart[][] = chunk.map(() => [])
    const whole: WindowValues[][] = chunk.map(() => [])
    for (const segment of plan.planned) {
      if (!('pieces' in segment) && segment.source !== 'raw' && wholeWindows(segment.source)) {
        const tier = segment.source
        if (keep === undefined || tier.ms !== HOUR_MS) {
          const read = await tierValuesOfDevices(ctx.runner, tier, pairs, { from: segment.from, until: segment.until, fn })
          read.forEach((rows, i) => whole[i]?.push(rows))
          continue
        }
        // Hours: the days kept whole from the start of the piece, then the rest read, and the
        // closed days of what was read kept.
        const from = segment.from.getTime()
        const until = segment.until.getTime()
        // Windows are hours here, one after another (a whole-hour zone's hours are UTC hours).
        const first = windows[0] as number
        const asked = chunk.map((device, i) => {
          const key = `${device.deviceId}:${device.sensorId}:${fn}`
          const revision = device.historyRevision ?? null
          // Hours before the latest reading's hour are closed.
          const closedUntil = device.lastReadingAt === null || device.lastReadingAt === undefined ? -Infinity : Math.floor(device.lastReadingAt.getTime() / HOUR_MS) * HOUR_MS
          let readFrom = from
          if (revision !== null) {
            const row = (start + i) * windows.length
            for (let day = Math.floor(from / DAY_MS) * DAY_MS; day < until; day += DAY_MS) {
              const kept = keep.get(key, revision, day)
              if (kept === undefined) break
              for (let h = 0, at = day; h < HOURS_A_DAY; h++, at += HOUR_MS) {
                if (at >= from && at < until) values[row + (at - first) / HOUR_MS] = kept[h] as number
              }
              readFrom = Math.min(until, day + DAY_MS)
            }
          }
          return { key, revision, closedUntil, readFrom }
        })
        const unread = asked.flatMap((a, i) => a.readFrom < until ? [{ ...(pairs[i] as DeviceSensor), from: new Date(a.readFrom), i }] : [])
        const read = await tierValuesOfDevices(ctx.runner, tier, unread, { from: segment.from, until: segment.until, fn })
        read.forEach((rows, k) => {
          const i = (unread[k] as { i: number }).i
          whole[i]?.push(rows)
          const a = asked[i] as { key: string, revision: number | null, closedUntil: number, readFrom: number }
          if (a.revision !== null) keepClosedDays(keep, a.key, a.revision, rows, a.readFrom, Math.min(until, a.closedUntil))
        })
        continue
      }
      if (!('pieces' in segment) && segment.source !== 'raw') {
        const read: BucketStates[] = await tierStatesOfDevices(ctx.runner, segment.source, pairs, { from: segment.from, until: segment.until, fn })
        read.forEach((rows, i) => parts[i]?.push({ rows, binned: false }))
        continue
      }
      // A short raw piece (an edge of the range) for every device in one statement; a device
      // with more readings there than a batch holds is read as its history reads it.
      const batched = !('pieces' in segment) ? await rawPairsOfDevices(ctx.runner, pairs, { from: segment.from, until: segment.until, limit: RAW_PAIRS_PER_DEVICE }) : pairs.map(() => null)
      const read = await Promise.all(pairs.map(async (base, i) => {
        const pairsRead = batched[i]
        return pairsRead === null || pairsRead === undefined ? await readPart(ctx, rollup, fn, base, segment, plan) : { rows: foldPairs(pairsRead, rollup), binned: true }
      }))
      read.forEach((part, i) => parts[i]?.push(part))
    }
    // Whole windows and folded ones never share a window (a tier that is the window's own size
    // serves whole windows only), so each is written where it falls. Both ascending: a walk.
    const place = (row: number, starts: Float64Array, found: Float64Array, count: number): void => {
      for (let b = 0, w = 0; b < count; b++) {
        const at = starts[b] as number
        while (w < windows.length && (windows[w] as number) < at) w++
        if (windows[w] === at) values[row + w] = found[b] as number
      }
    }
    parts.forEach((deviceParts, i) => {
      const row = (start + i) * windows.length
      for (const read of whole[i] ?? []) place(row, read.starts, read.values, read.starts.length)
      if (deviceParts.length === 0) return
      const folded = foldParts(deviceParts, plan.keyOf, fn, false)
      place(row, folded.starts, folded.values, folded.buckets)
    })
  }
  // Two chunks in flight: both cores busy, and each chunk's states dropped once folded.
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < devices.length) {
      const start = next
      next += DEVICES_PER_READ
      await readChunk(start)
    }
  }
  await Promise.all([worker(), worker()])
  return { windows, values }
}
