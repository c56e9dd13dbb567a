import type { Runner } from '@esp/db'
import { inZone, parseRollup, parseTimeZone, referenceAggregate, type RollupFunction } from '@esp/domain'
import { seededRandom } from '@esp/test-helpers/random'
import { readAreaValues } from '../../src/area/area-values.js'
import { statisticsJson } from '../../src/area/statistics.js'
import type { ClosedDays } from '../../src/area/closed-days.js'

/**
 * Area statistics held to a plain reference on an engine: devices reporting at different
 * intervals, with gaps, across the changes of the clocks in Europe and America; every window's
 * statistics across the devices' own values, computed again here from the raw points (each
 * device's value by referenceAggregate, then the statistics written out plainly).
 */
export interface AreaHarness {
  runner: Runner
  newDevice: () => Promise<number>
  /** writes the points of one sensor of a device (first value per time wins, as ingest keeps it) */
  write: (deviceId: number, sensorId: number, points: ReadonlyArray<{ at: number, value: number }>) => Promise<void>
  /** whatever the engine needs before reads see the writes at rest (cagg refresh), if anything */
  settle: () => Promise<void>
  /** where the engine keeps closed days: each pair's history revision, read as the route reads it */
  kept?: { days: ClosedDays, revision: (deviceId: number, sensorId: number) => Promise<number | null> }
}

export const SENSOR = 55
// Across the United States' change of the clocks (9 March 2025) and Europe's (30 March).
const START = Date.UTC(2025, 2, 6)
const DAYS = 27
const MINUTE = 60_000
/** Each device's reporting interval: every 2 minutes to every 2 hours, and one with one reading. */
const INTERVALS = [2 * MINUTE, 5 * MINUTE, 13 * MINUTE, 60 * MINUTE, 120 * MINUTE, 0]

const close = (a: number | null, b: number | null): boolean =>
  a === null || b === null ? a === b : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b))

/** The linear percentile, as numpy's default computes it, written out separately from the code under test. */
function percentileOf (ascending: number[], p: number): number {
  const position = (p / 100) * (ascending.length - 1)
  const below = ascending[Math.floor(position)] as number
  const above = ascending[Math.ceil(position)] as number
  return below + (above - below) * (position - Math.floor(position))
}

interface ExpectedWindow { time: number, devices: number, mean: number, sd: number | null, min: number, max: number, median: number, percentiles: number[], values: Array<[number, number]> }

export interface AreaCase { rollup: string, zone?: string, fn: RollupFunction, from: number, to: number }

/** The cases a run checks: rollups served by each tier and by raw rows, zones, functions, ranges. */
export function areaCases (fns: readonly RollupFunction[]): AreaCase[] {
  const end = START + DAYS * 86_400_000
  const ranges = [
    { from: START, to: end },
    // Edges inside hours and days: raw pieces at both ends.
    { from: START + 3 * 86_400_000 + 37 * MINUTE + 13_000, to: end - 5 * 86_400_000 - 11 * MINUTE }
  ]
  const cases: AreaCase[] = []
  const rollups = [{ rollup: '1h' }, { rollup: '3h' }, { rollup: '1d' }, { rollup: '1w' }, { rollup: '1M' }, { rollup: '30m' },
    { rollup: '1h', zone: 'Asia/Kolkata' }, { rollup: '1d', zone: 'Europe/Madrid' }, { rollup: '1d', zone: 'America/New_York' }, { rollup: '1h', zone: 'Europe/Madrid' }, { rollup: '1w', zone: 'Europe/Madrid' }]
  rollups.forEach((r, i) => {
    fns.forEach((fn, k) => { cases.push({ ...r, fn, ...(ranges[(i + k) % ranges.length] as { from: number, to: number }) }) })
  })
  return cases
}

export async function checkAreaConformance (harness: AreaHarness, fns: readonly RollupFunction[]): Promise<number> {
  const random = seededRandom(38)
  const devices: Array<{ deviceId: number, sensorId: number, lastReadingAt: Date | null, historyRevision: number | null, points: Array<{ at: number, value: number }> }> = []
  for (const interval of INTERVALS) {
    const deviceId = await harness.newDevice()
    const points: Array<{ at: number, value: number }> = []
    if (interval === 0) {
      points.push({ at: START + 4 * 86_400_000 + 17 * MINUTE, value: 21.5 })
    } else {
      // A gap of two days somewhere, and times off the minute.
      const gap = START + Math.floor(random() * (DAYS - 3)) * 86_400_000
      for (let at = START + Math.floor(random() * interval); at < START + DAYS * 86_400_000; at += interval) {
        if (at >= gap && at < gap + 2 * 86_400_000) continue
        points.push({ at, value: Math.round((10 + 8 * Math.sin(at / 86_400_000 * 2 * Math.PI) + random() * 20 - 10) * 1000) / 1000 })
      }
    }
    await harness.write(deviceId, SENSOR, points)
    devices.push({ deviceId, sensorId: SENSOR, lastReadingAt: new Date(Math.max(...points.map((p) => p.at))), historyRevision: null, points })
  }
  await harness.settle()
  const percentiles = [10, 25, 90]
  let checked = 0
  const pass = async (label: string): Promise<void> => {
    for (const device of devices) device.historyRevision = await harness.kept?.revision(device.deviceId, device.sensorId) ?? null
    for (const c of areaCases(fns)) {
      await checkCase(c, label)
      checked++
    }
  }
  const checkCase = async (c: AreaCase, pass: string): Promise<void> => {
    const rollup = inZone(parseRollup(c.rollup), parseTimeZone(c.zone))
    const request = { rollup, fn: c.fn, from: new Date(c.from), to: new Date(c.to) }
    const read = await readAreaValues({ runner: harness.runner, now: () => new Date(START + 400 * 86_400_000), maxBuckets: 100_000 }, devices, request, { maxWindows: 100_000, maxDeviceWindows: 10_000_000 }, harness.kept?.days)
    const answer = JSON.parse((await statisticsJson({ measured: { sensorId: SENSOR }, devices: devices.map((d) => ({ ...d, latitude: null, longitude: null })), ...request, ...read }, percentiles, true)).toString()) as { devices: number, windows: Array<Omit<ExpectedWindow, 'time'> & { time: string }> }

    // The reference: each device's windows from its raw points, then the statistics per window.
    const byWindow = new Map<number, Array<[number, number]>>()
    for (const device of devices) {
      const inRange = device.points.filter((p) => p.at >= c.from && p.at <= c.to)
      for (const bucket of referenceAggregate(inRange, rollup, c.fn)) {
        if (bucket.value === null) continue
        const listed = byWindow.get(bucket.bucket) ?? []
        listed.push([device.deviceId, bucket.value])
        byWindow.set(bucket.bucket, listed)
      }
    }
    const expected: ExpectedWindow[] = [...byWindow.entries()].sort(([a], [b]) => b - a).map(([time, values]) => {
      const ascending = values.map(([, v]) => v).sort((a, b) => a - b)
      const n = ascending.length
      const mean = ascending.reduce((s, v) => s + v, 0) / n
      const sd = n < 2 ? null : Math.sqrt(ascending.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1))
      return { time, devices: n, mean, sd, min: ascending[0] as number, max: ascending[n - 1] as number, median: percentileOf(ascending, 50), percentiles: percentiles.map((p) => percentileOf(ascending, p)), values }
    })
    const label = `${pass}: ${c.rollup}${c.zone === undefined ? '' : ` in ${c.zone}`} ${c.fn} from ${new Date(c.from).toISOString()} to ${new Date(c.to).toISOString()}`
    if (answer.windows.length !== expected.length) throw new Error(`${label}: ${answer.windows.length} windows, expected ${expected.length}`)
    const counted = new Set([...byWindow.values()].flatMap((values) => values.map(([id]) => id))).size
    if (answer.devices !== counted) throw new Error(`${label}: ${answer.devices} devices, expected ${counted}`)
    answer.windows.forEach((got, i) => {
      const want = expected[i] as ExpectedWindow
      const same = Date.parse(got.time) === want.time && got.devices === want.devices &&
        close(got.mean, want.mean) && close(got.sd, want.sd) && close(got.min, want.min) && close(got.max, want.max) && close(got.median, want.median) &&
        got.percentiles.length === want.percentiles.length && got.percentiles.every((p, k) => close(p, want.percentiles[k] ?? NaN)) &&
        got.values.length === want.values.length && got.values.every(([id, v], k) => id === want.values[k]?.[0] && close(v, want.values[k]?.[1] ?? NaN))
      if (!same) throw new Error(`${label}: window ${i} is ${JSON.stringify(got)}, expected ${JSON.stringify({ ...want, time: new Date(want.time).toISOString() })}`)
    })
  }
  // Cold, then from the days kept by the first pass; then a reading stored into a closed day of
  // the first device (a backfill: its revision moves) must be in the next answers.
  await pass('first reads')
  await pass('kept days')
  const backfilled = devices[0] as typeof devices[number]
  const late = { at: START + 2 * 86_400_000 + 30 * MINUTE + 7_000, value: 1234.5 }
  await harness.write(backfilled.deviceId, SENSOR, [late])
  backfilled.points.push(late)
  await harness.settle()
  await pass('after a backfill')
  return checked
}
