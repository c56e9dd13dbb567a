import fc from 'fast-check'
import type { Runner } from '@esp/db'
import type { RollupSeries } from '../../src/readings/rollup-series.js'
import { inZone, parseRollup, parseTimeZone, readingsHistory, referenceAggregate, rollupFunctions, type RollupFunction } from '@esp/domain'

/**
 * The conformance property both engines must satisfy: readings written in random batches (late,
 * duplicated, out of order, sparse, sub-second) answer every function and rollup exactly as a
 * plain computation over the raw rows does (relative 1e-9 for avg, dev and sum).
 */
export interface EngineHarness {
  runner: Runner
  newDevice: () => Promise<number>
  /** writes one batch in arrival order; the first value per (sensor, time) must win */
  write: (deviceId: number, batch: { sensor: number, at: number, value: number }[]) => Promise<void>
  /** whatever the engine needs before reads see the writes at rest (cagg refresh), if anything */
  settle: () => Promise<void>
}

export const ROLLUPS = ['500ms', '90s', '7m', '3h', '1d', '1w', '1M', '1y']
/**
 * Wall clocks: whole-hour zones with daylight saving in either hemisphere (served from the hourly
 * tier, and on the native engine from their offsets' daily tiers), half- and quarter-hour ones and
 * a half-hour DST (served from raw rows), and London, whose winter days are UTC days (the daily
 * tier). The 400 days of every scenario cross their changes of the clocks.
 */
export const ZONES = ['Europe/Madrid', 'Asia/Kolkata', 'America/New_York', 'Asia/Kathmandu', 'Australia/Sydney', 'Australia/Lord_Howe', 'Europe/London']
export const ZONED_ROLLUPS = ['1h', '6h', '1d', '1w', '1M', '1y']
export const SENSORS = [55, 56]
const START = Date.UTC(2025, 0, 1)
const SPAN = 400 * 24 * 3600 * 1000

const close = (actual: number | null, expected: number | null, fn: RollupFunction): boolean => {
  if (actual === null || expected === null) return actual === expected
  if (fn === 'avg' || fn === 'dev' || fn === 'sum') return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected))
  return actual === expected
}

/** How the answers read in runs of a few buckets came: streamed, or whole (gathered, or never in runs). */
export const answersInRuns = { streamed: 0, whole: 0 }

export async function checkConformance (harness: EngineHarness, numRuns: number): Promise<number> {
  const reading = fc.record({
    sensor: fc.constantFrom(...SENSORS),
    cluster: fc.integer({ min: 0, max: 11 }),
    offset: fc.integer({ min: 0, max: 36 * 3600 * 1000 }),
    value: fc.oneof(fc.double({ min: -1000, max: 1000, noNaN: true, noDefaultInfinity: true }), fc.double({ min: 101324.99, max: 101325.01, noNaN: true }))
  })
  const scenario = fc.record({
    readings: fc.array(reading, { minLength: 1, maxLength: 120 }),
    duplicates: fc.array(fc.nat(), { maxLength: 10 }),
    batchSize: fc.integer({ min: 1, max: 50 }),
    shuffleSeed: fc.integer(),
    range: fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean())
  })
  let runs = 0
  await fc.assert(fc.asyncProperty(scenario, async (s) => {
    runs++
    const deviceId = await harness.newDevice()
    const clusterBase = (c: number): number => START + Math.floor((c * SPAN) / 12)
    const entries = s.readings.map((r) => ({ sensor: r.sensor, at: clusterBase(r.cluster) + r.offset, value: r.value }))
    for (const d of s.duplicates) {
      const original = entries[d % entries.length]
      if (original !== undefined) entries.push({ ...original, value: original.value + 1 })
    }
    const order = entries.map((e, i) => ({ e, k: Math.sin(i * 9973 + s.shuffleSeed) })).sort((a, b) => a.k - b.k).map((x) => x.e)
    const firstWins = new Map<string, { sensor: number, at: number, value: number }>()
    for (let i = 0; i < order.length; i += s.batchSize) {
      const batch = order.slice(i, i + s.batchSize)
      for (const e of batch) if (!firstWins.has(`${e.sensor}:${e.at}`)) firstWins.set(`${e.sensor}:${e.at}`, e)
      await harness.write(deviceId, batch)
    }
    await harness.settle()
    const times = [...firstWins.values()].map((e) => e.at)
    const lo = Math.min(...times)
    const hi = Math.max(...times)
    let from = lo + Math.floor((hi - lo) * Math.min(s.range[0], s.range[1]))
    let to = lo + Math.floor((hi - lo) * Math.max(s.range[0], s.range[1]))
    if (s.range[2]) { from = lo; to = hi }
    const zone = ZONES[runs % ZONES.length]
    const cases = [...ROLLUPS.map((text) => ({ text, zone: undefined })), ...ZONED_ROLLUPS.map((text) => ({ text, zone }))]
    for (const sensor of SENSORS) {
      const points = [...firstWins.values()].filter((e) => e.sensor === sensor && e.at >= from && e.at <= to).map((e) => ({ at: e.at, value: e.value }))
      for (const { text, zone } of cases) {
        for (const fn of rollupFunctions) {
          // Every other run, raw pieces group first and last in SQL rather than folding them
          // here, as pieces too dense to fold do.
          const dense = runs % 2 === 0 ? { rawPairsMax: 0 } : {}
          const got = await readingsHistory({ runner: harness.runner, now: () => new Date(START + SPAN * 2), maxBuckets: Number.MAX_SAFE_INTEGER, ...dense }, deviceId,
            { sensor_id: String(sensor), rollup: text, function: fn, from: new Date(from).toISOString(), to: new Date(to).toISOString(), timezone: zone, coverage: 'true' })
          const expected = referenceAggregate(points, inZone(parseRollup(text), parseTimeZone(zone)), fn).reverse()
          const label = `device ${deviceId} sensor ${sensor} ${text}${zone === undefined ? '' : ` in ${zone}`} ${fn}`
          if (got.readings.length !== expected.length) throw new Error(`${label}: ${got.readings.length} buckets, expected ${expected.length}`)
          if (got.sample_size !== points.length) throw new Error(`${label}: sample_size ${got.sample_size}, expected ${points.length}`)
          got.readings.tuples().forEach(([at, value, count], i) => {
            const want = expected[i]
            if (want === undefined || new Date(at).getTime() !== want.bucket || !close(value, want.value, fn) || count !== want.count) {
              throw new Error(`${label}: bucket ${i} is [${at}, ${value}, ${count}], expected [${new Date(want?.bucket ?? 0).toISOString()}, ${want?.value}, ${want?.count}]`)
            }
          })
        }
        // The same window read in runs of a few buckets (issue 35): streamed, or gathered into
        // one answer, it is the reference all the same, whatever function.
        const fn = rollupFunctions[(runs + cases.findIndex((c) => c.text === text)) % rollupFunctions.length] ?? 'avg'
        const maxBuckets = 2 + (runs * 3) % 5
        const got = await readingsHistory({ runner: harness.runner, now: () => new Date(START + SPAN * 2), maxBuckets, stream: { maxBuckets: Number.MAX_SAFE_INTEGER } }, deviceId,
          { sensor_id: String(sensor), rollup: text, function: fn, from: new Date(from).toISOString(), to: new Date(to).toISOString(), timezone: zone, coverage: 'true' })
        const runTuples: ReturnType<RollupSeries['tuples']> = []
        let sampleSize = 0
        if ('streamed' in got) {
          answersInRuns.streamed++
          for await (const run of got.streamed) { runTuples.push(...run.readings.tuples()); sampleSize += run.sampleSize }
        } else {
          answersInRuns.whole++
          runTuples.push(...got.readings.tuples())
          sampleSize = got.sample_size
        }
        const expected = referenceAggregate(points, inZone(parseRollup(text), parseTimeZone(zone)), fn).reverse()
        const label = `device ${deviceId} sensor ${sensor} ${text}${zone === undefined ? '' : ` in ${zone}`} ${fn} in runs of ${maxBuckets}`
        if (runTuples.length !== expected.length || sampleSize !== points.length) throw new Error(`${label}: ${runTuples.length} buckets of ${sampleSize} readings, expected ${expected.length} of ${points.length}`)
        runTuples.forEach(([at, value, count], i) => {
          const want = expected[i]
          if (want === undefined || new Date(at).getTime() !== want.bucket || !close(value, want.value, fn) || count !== want.count) {
            throw new Error(`${label}: bucket ${i} is [${at}, ${value}, ${count}], expected [${new Date(want?.bucket ?? 0).toISOString()}, ${want?.value}, ${want?.count}]`)
          }
        })
      }
    }
  }), { numRuns, seed: 20261122 })
  return runs
}
