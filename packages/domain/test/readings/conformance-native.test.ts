import t from 'tap'
import fc from 'fast-check'
import { loadEngine, postgresRunner } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ingestReadings, parseRollup, readingsHistory, referenceAggregate, rollupFunctions, type RollupFunction } from '@esp/domain'

/**
 * Conformance of the native engine (real PostgreSQL): readings written through the one write path
 * in random batches (late, duplicated, out of order, sparse) answer every function and rollup
 * exactly as a plain computation over the raw rows does.
 */
const ROLLUPS = ['500ms', '90s', '7m', '3h', '1d', '1w', '1M', '1y']
const START = Date.UTC(2025, 0, 1)
const SPAN = 400 * 24 * 3600 * 1000
const SENSORS = [55, 56]

const close = (actual: number | null, expected: number | null, fn: RollupFunction): boolean => {
  if (actual === null || expected === null) return actual === expected
  if (fn === 'avg' || fn === 'dev' || fn === 'sum') return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected))
  return actual === expected
}

t.test('native engine = reference, for every function and rollup', async (t) => {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  t.equal(engine.name, 'native')
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('conformance', 'c@example.org') returning id`
  const ctx = { database, engine, now: () => new Date(START + SPAN + 86_400_000), limits: { maxValues: 100_000, maxFutureMs: 86_400_000, minTime: new Date(0) } }

  const reading = fc.record({
    sensor: fc.constantFrom(...SENSORS),
    // Clusters make buckets with several readings; sub-second offsets exercise 500ms.
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
    const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'c') returning id`
    const deviceId = device?.id ?? 0
    const clusterBase = (c: number): number => START + Math.floor((c * SPAN) / 12)
    const entries = s.readings.map((r) => ({ sensor: r.sensor, at: clusterBase(r.cluster) + r.offset, value: r.value }))
    for (const d of s.duplicates) {
      const original = entries[d % entries.length]
      if (original !== undefined) entries.push({ ...original, value: original.value + 1 })
    }
    // Out of order: a deterministic shuffle, then batches; the first written value must win.
    const order = entries.map((e, i) => ({ e, k: Math.sin(i * 9973 + s.shuffleSeed) })).sort((a, b) => a.k - b.k).map((x) => x.e)
    const firstWins = new Map<string, { sensor: number, at: number, value: number }>()
    for (let i = 0; i < order.length; i += s.batchSize) {
      const batch = order.slice(i, i + s.batchSize)
      for (const e of batch) if (!firstWins.has(`${e.sensor}:${e.at}`)) firstWins.set(`${e.sensor}:${e.at}`, e)
      await ingestReadings(ctx, { id: deviceId, kitId: null }, batch.map((e) => ({ recorded_at: new Date(e.at).toISOString(), sensors: [{ id: e.sensor, value: e.value }] })))
    }
    const times = [...firstWins.values()].map((e) => e.at)
    const lo = Math.min(...times)
    const hi = Math.max(...times)
    let from = lo + Math.floor((hi - lo) * Math.min(s.range[0], s.range[1]))
    let to = lo + Math.floor((hi - lo) * Math.max(s.range[0], s.range[1]))
    if (s.range[2]) { from = lo; to = hi }
    for (const sensor of SENSORS) {
      const points = [...firstWins.values()].filter((e) => e.sensor === sensor && e.at >= from && e.at <= to).map((e) => ({ at: e.at, value: e.value }))
      for (const text of ROLLUPS) {
        for (const fn of rollupFunctions) {
          const got = await readingsHistory({ database, now: ctx.now, maxBuckets: Number.MAX_SAFE_INTEGER }, { id: deviceId, kitId: null },
            { sensor_id: String(sensor), rollup: text, function: fn, from: new Date(from).toISOString(), to: new Date(to).toISOString() })
          const expected = referenceAggregate(points, parseRollup(text), fn).reverse()
          const label = `device ${deviceId} sensor ${sensor} ${text} ${fn}`
          if (got.readings.length !== expected.length) throw new Error(`${label}: ${got.readings.length} buckets, expected ${expected.length}`)
          if (got.sample_size !== points.length) throw new Error(`${label}: sample_size ${got.sample_size}, expected ${points.length}`)
          got.readings.forEach(([at, value], i) => {
            const want = expected[i]
            if (want === undefined || new Date(at).getTime() !== want.bucket || !close(value, want.value, fn)) {
              throw new Error(`${label}: bucket ${i} is [${at}, ${value}], expected [${new Date(want?.bucket ?? 0).toISOString()}, ${want?.value}]`)
            }
          })
        }
      }
    }
  }), { numRuns: 30, seed: 20261122 })
  t.equal(runs, 30)
})

t.test('the deviation of 101325 +- 0.01 survives every tier', async (t) => {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('dev', 'd@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'p') returning id`
  const values = Array.from({ length: 2000 }, (_, i) => 101325 + (i % 2 === 0 ? 0.01 : -0.01))
  const data = values.map((value, i) => ({ recorded_at: new Date(START + i * 60_000).toISOString(), sensors: [{ id: 58, value }] }))
  const ctx = { database, engine, now: () => new Date(START + SPAN), limits: { maxValues: 100_000, maxFutureMs: 0, minTime: new Date(0) } }
  await ingestReadings(ctx, { id: device?.id ?? 0, kitId: null }, data)
  const points = values.map((value, i) => ({ at: START + i * 60_000, value }))
  for (const rollup of ['1y', '1d', '1h', '7m']) {
    const got = await readingsHistory({ database, now: ctx.now, maxBuckets: 100_000 }, { id: device?.id ?? 0, kitId: null },
      { sensor_id: '58', rollup, function: 'dev', from: new Date(START).toISOString(), to: new Date(START + 2000 * 60_000).toISOString() })
    const expected = referenceAggregate(points, parseRollup(rollup), 'dev').reverse()
    t.equal(got.readings.length, expected.length)
    got.readings.forEach(([, dev], i) => {
      const want = expected[i]?.value ?? NaN
      t.ok(dev !== null && dev > 0.0099 && Math.abs(dev - want) <= 1e-9 * want, `${rollup}: dev ${String(dev)} = ${want}`)
    })
  }
})
