import t from 'tap'
import fc from 'fast-check'
import {
  TIERS, aggregateByBucket, engineName, tierStates, timescaleEngine, writeReadings,
  type ReadingRow, type Runner, type Tier
} from '../../src/timeseries/index.js'
import { rawInsertSteps, recordingRunner } from '@esp/db/testing'
import { inRunnerTransaction, openTimescalePglite } from '@esp/db/testing/pglite'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const SENSORS = [101, 102, 103]
const TIER_COLUMNS = ['device_id', 'sensor_id', 'bucket', 'count', 'mean', 'm2', 'sum', 'min', 'max', 'first_at', 'first_val', 'last_at', 'last_val']

// One instance for the whole file: each costs 0.5–0.9 GB and seconds to start (PITFALLS.md §3).
const started = Date.now()
const pglite = await openTimescalePglite()
t.teardown(pglite.close)
t.comment(`PGlite + TimescaleDB created and migrated in ${Date.now() - started} ms, RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`)
const runner: Runner = pglite.runner
const engine = timescaleEngine()
const write = async (rows: ReadingRow[]): Promise<Awaited<ReturnType<typeof writeReadings>>> => await inRunnerTransaction(runner, async () => await writeReadings(runner, engine, rows))

// Migrated but not seeded: the rows the foreign keys of readings and components need.
const [owner] = await runner.query<{ id: number }>("insert into users (username, email) values ('timescale', 'timescale@example.org') returning id")
await runner.query("insert into sensors (id, name) select id, 'sensor ' || id from unnest($1::int[]) as id", [SENSORS])

async function newDevice (): Promise<number> {
  const [device] = await runner.query<{ id: number }>("insert into devices (owner_id, name) values ($1, 'timescale test') returning id", [owner?.id])
  if (device === undefined) throw new Error('no device inserted')
  return device.id
}

async function refresh (): Promise<void> {
  // The daily tier is built from the hourly one's materialization, so the order matters.
  await runner.query("CALL refresh_continuous_aggregate('readings_hourly', NULL, NULL)")
  await runner.query("CALL refresh_continuous_aggregate('readings_daily', NULL, NULL)")
}

/**
 * Relative 1e-9, absolute 1e-9 below 1: the JS reference folds with Welford and PostgreSQL with
 * Youngs-Cramer and Chan, so the last digits differ; a sum of squares would be off by far more.
 */
function close (actual: number, expected: number): boolean {
  return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected))
}

/** The first mismatch between a tier and the reference folded from `rows`, or null. */
async function mismatch (tier: Tier, deviceId: number, sensorIds: number[], rows: ReadingRow[], from: number, until: number): Promise<string | null> {
  const expected = aggregateByBucket(rows, tier.ms)
  for (const sensorId of sensorIds) {
    const want = expected.filter((e) => e.sensorId === sensorId)
    const got = (await tierStates(runner, tier, { deviceId, sensorId, from: new Date(from), until: new Date(until) })).toArray()
    if (got.length !== want.length) return `${tier.name} sensor ${sensorId}: ${got.length} buckets instead of ${want.length}`
    for (const [i, g] of got.entries()) {
      const e = want[i]
      if (e === undefined) return 'unreachable'
      const where = `${tier.name} sensor ${sensorId} bucket ${new Date(e.bucket).toISOString()}`
      const exact: [string, unknown, unknown][] = [
        ['bucket', g.bucket, e.bucket], ['count', g.count, e.count], ['sum', g.sum, e.sum],
        ['min', g.min, e.min], ['max', g.max, e.max], ['firstAt', g.firstAt, e.firstAt],
        ['first', g.first, e.first], ['lastAt', g.lastAt, e.lastAt], ['last', g.last, e.last]
      ]
      for (const [name, a, b] of exact) if (a !== b) return `${where}: ${name} ${String(a)} instead of ${String(b)}`
      if (!close(g.mean, e.mean)) return `${where}: mean ${g.mean} instead of ${e.mean}`
      if (!close(g.m2, e.m2)) return `${where}: m2 ${g.m2} instead of ${e.m2}`
    }
  }
  return null
}

t.test('the migration built the timescale engine', async (t) => {
  t.equal(await engineName(runner), 'timescale', 'esp_settings records the forced engine')
  const hypertables = await runner.query<{ hypertable_name: string }>('select hypertable_name from timescaledb_information.hypertables')
  t.same(hypertables.map((h) => h.hypertable_name), ['readings'])
  const caggs = await runner.query<{ view_name: string, materialized_only: boolean }>(
    'select view_name, materialized_only from timescaledb_information.continuous_aggregates order by view_name')
  t.same(caggs, [{ view_name: 'readings_daily', materialized_only: false }, { view_name: 'readings_hourly', materialized_only: false }],
    'both tiers are continuous aggregates with real-time aggregation')
  const [daily] = await runner.query<{ view_definition: string }>(
    "select view_definition from timescaledb_information.continuous_aggregates where view_name = 'readings_daily'")
  t.match(daily?.view_definition, /FROM readings_hourly/, 'the daily tier is built from the hourly one')
  for (const tier of TIERS) {
    const columns = await runner.query<{ column_name: string }>(
      'select column_name from information_schema.columns where table_name = $1 order by ordinal_position', [tier.table])
    t.same(columns.map((c) => c.column_name), TIER_COLUMNS, `${tier.table} has the native tier's columns`)
  }
  const jobs = await runner.query<{ proc_name: string, hypertable_name: string, config: Record<string, unknown> }>(`
    select proc_name, hypertable_name, config from timescaledb_information.jobs
    where proc_name in ('policy_refresh_continuous_aggregate', 'policy_compression') order by hypertable_name`)
  t.match(jobs, [
    { proc_name: 'policy_compression', hypertable_name: 'readings', config: { compress_after: '30 days' } },
    { proc_name: 'policy_refresh_continuous_aggregate', hypertable_name: 'readings_daily', config: { start_offset: null, end_offset: '1 day' } },
    { proc_name: 'policy_refresh_continuous_aggregate', hypertable_name: 'readings_hourly', config: { start_offset: null, end_offset: '01:00:00' } }
  ])
  t.equal(jobs.length, 3)
})

t.test('the refresh policies, run by hand, take in writes older than any window', async (t) => {
  // Nothing schedules jobs on PGlite (PITFALLS.md §3), so run_job stands in for the scheduler.
  const deviceId = await newDevice()
  const at = Date.parse('2020-03-01T10:00:00Z')
  const row = (ms: number, value: number): ReadingRow => ({ deviceId, sensorId: 101, recordedAt: new Date(at + ms), value, rawValue: value })
  const jobs = await runner.query<{ job_id: number }>(
    "select job_id from timescaledb_information.jobs where proc_name = 'policy_refresh_continuous_aggregate' order by hypertable_name desc")
  t.equal(jobs.length, 2)
  const runJobs = async (): Promise<void> => { for (const { job_id: id } of jobs) await runner.query(`CALL run_job(${Number(id)})`) }
  const sums = async (): Promise<number[]> => {
    const out: number[] = []
    for (const tier of TIERS) out.push(...(await tierStates(runner, tier, { deviceId, sensorId: 101, from: new Date(at - DAY), until: new Date(at + DAY) })).toArray().map((s) => s.sum))
    return out
  }
  await write([row(0, 1), row(60_000, 2)])
  await runJobs()
  t.same(await sums(), [3, 3])
  await write([row(120_000, 4)])
  t.same(await sums(), [3, 3], 'below the watermark a tier serves what was materialized')
  await runJobs()
  t.same(await sums(), [7, 7], 'a backlog years old reaches both tiers at the next policy run')
})

/**
 * Times anywhere in 4 days (most hours stay empty), on bucket edges (±1 ms), or in three busy
 * hours over two days, so that hours hold many readings and days several hours to merge.
 */
const offsetArb = fc.oneof(
  fc.integer({ min: 0, max: 4 * DAY - 1 }),
  fc.tuple(fc.integer({ min: 0, max: 96 }), fc.constantFrom(-1, 0, 1)).map(([h, d]) => h * HOUR + d),
  fc.tuple(fc.constantFrom(5, 7, 30), fc.integer({ min: 0, max: HOUR - 1 })).map(([h, ms]) => h * HOUR + ms))
const pointArb = fc.record({
  sensor: fc.nat({ max: 2 }),
  at: offsetArb,
  /** when set, the point repeats the sensor and time of an earlier one with its own value */
  dupOf: fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: fc.nat(), weight: 1 }),
  k: fc.integer({ min: -40_000, max: 40_000 }),
  order: fc.nat(),
  breakAfter: fc.nat({ max: 7 }).map((x) => x === 0),
  late: fc.nat({ max: 4 }).map((x) => x === 0)
})
const caseArb = fc.record({
  /** one family per sensor, as a real sensor reports: true = pressure near 101325 */
  pressure: fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }),
  points: fc.array(pointArb, { minLength: 1, maxLength: 150, size: 'medium' })
})

let run = 0

t.test('property: both tiers equal the reference folded from the first-written readings', async (t) => {
  const [began, firstRun] = [Date.now(), run]
  await fc.assert(fc.asyncProperty(caseArb, async ({ pressure, points }) => {
    // Every run (shrinks too) gets later times than all before it: above both tiers' watermarks,
    // so the first check sees real-time aggregation over rows no refresh has touched.
    const base = Date.UTC(2024, 0, 1) + run++ * 8 * DAY
    const deviceId = await newDevice()
    const sensorIds = SENSORS.slice(0, pressure.length)
    // Values on a 2^-14 grid (pressure, within ±0.01 of 101325) or in quarters: every sum is then
    // exact in any order and can be compared exactly, while the pressure values still need a
    // stable variance (a sum of squares loses every digit of a 0.01 deviation at 1e5).
    const rows = points.map((p, i) => {
      const source = p.dupOf === null || i === 0 ? p : points[p.dupOf % i] ?? p
      const s = source.sensor % sensorIds.length
      const value = pressure[s] === true ? 101325 + (p.k % 165) / 16384 : p.k / 4
      return { row: { deviceId, sensorId: sensorIds[s] ?? 0, recordedAt: new Date(base + source.at), value, rawValue: value }, p }
    }).sort((a, b) => a.p.order - b.p.order)
    const phases = [rows.filter((r) => !r.p.late), rows.filter((r) => r.p.late)].map((phase) => {
      // Random batches, each unique per (sensor, recorded_at) as writeReadings requires.
      const batches: ReadingRow[][] = [[]]
      for (const { row, p } of phase) {
        const batch = batches.at(-1) ?? []
        if (!batch.some((r) => r.sensorId === row.sensorId && r.recordedAt.getTime() === row.recordedAt.getTime())) batch.push(row)
        if (p.breakAfter) batches.push([])
      }
      return batches.filter((b) => b.length > 0)
    })
    const firstWritten = new Map<string, ReadingRow>()
    const check = async (when: string): Promise<void> => {
      const unique = [...firstWritten.values()]
      for (const tier of TIERS) {
        const problem = await mismatch(tier, deviceId, sensorIds, unique, base - DAY, base + 6 * DAY)
        if (problem !== null) throw new Error(`${when}: ${problem}`)
      }
    }
    for (const [phase, batches] of phases.entries()) {
      for (const batch of batches) {
        const result = await write(batch)
        let fresh = 0
        for (const row of batch) {
          const key = `${row.sensorId}:${row.recordedAt.getTime()}`
          if (!firstWritten.has(key)) { firstWritten.set(key, row); fresh++ }
        }
        if (result.stored !== fresh) throw new Error(`stored ${result.stored} of a batch with ${fresh} new readings`)
      }
      if (phase === 0) await check('real-time, before any refresh of these times')
      await refresh()
      await check(phase === 0 ? 'after refreshing' : 'after late writes and a refresh')
    }
  }), { numRuns: 30 })
  t.comment(`${run - firstRun} property runs in ${Date.now() - began} ms, RSS ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`)
  t.pass('hourly and daily tiers match the reference')
})

t.test('1000 values of 101325 ± 0.01 in one hour keep their deviation', async (t) => {
  const deviceId = await newDevice()
  const at = Date.UTC(2040, 5, 1, 10)
  // Alternating ±0.01: the sample deviation is 0.01 · sqrt(1000/999), about 0.0100050.
  const values = Array.from({ length: 1000 }, (_, i) => i % 2 === 0 ? 101325.01 : 101324.99)
  const rows = values.map((value, i): ReadingRow => ({ deviceId, sensorId: 102, recordedAt: new Date(at + i * 3600), value, rawValue: value }))
  await write(rows)
  // Two-pass reference on the same doubles: the stored values are not exactly ±0.01 apart.
  const mean = values.reduce((s, v) => s + v, 0) / values.length
  const expected = Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (values.length - 1))
  const daily = TIERS.find((tier) => tier.name === 'daily')
  if (daily === undefined) throw new Error('no daily tier')
  for (const when of ['real-time', 'after refreshing']) {
    if (when !== 'real-time') await refresh()
    const [state] = (await tierStates(runner, daily, { deviceId, sensorId: 102, from: new Date(Date.UTC(2040, 5, 1)), until: new Date(Date.UTC(2040, 5, 2)) })).toArray()
    t.equal(state?.count, 1000, when)
    const sd = Math.sqrt((state?.m2 ?? Number.NaN) / (1000 - 1))
    t.ok(Math.abs(sd - 0.01 * Math.sqrt(1000 / 999)) < 1e-8, `${when}: deviation ${sd}`)
    t.ok(Math.abs(sd - expected) <= 1e-9 * expected, `${when}: within 1e-9 of the two-pass deviation ${expected}`)
  }
})

t.test('new readings go into the hypertable by binary COPY; a stored one makes the write fall back to INSERT', async (t) => {
  const deviceId = await newDevice()
  const at = Date.UTC(2041, 2, 3, 4, 5, 6, 789)
  const row = (ms: number, value: number): ReadingRow => ({ deviceId, sensorId: 103, recordedAt: new Date(at + ms), value, rawValue: value / 2 })
  const copyWrite = async (rows: ReadingRow[]): Promise<{ stored: number, steps: string[] }> => {
    const { runner: recorded, log } = recordingRunner(runner)
    const { stored } = await inRunnerTransaction(runner, async () => await writeReadings(recorded, engine, rows))
    return { stored, steps: rawInsertSteps(log) }
  }
  t.same(await copyWrite([row(0, 0.1), row(1, -7)]), { stored: 2, steps: ['copy readings'] })
  t.same(await copyWrite([row(1, 99), row(2, 3)]), { stored: 1, steps: ['copy readings', 'rollback to savepoint', 'insert into readings'] })
  const stored = await runner.query<{ ms: number, value: number, raw_value: number }>(
    'select (extract(epoch from recorded_at) * 1000)::float8 as ms, value, raw_value from readings where device_id = $1 order by recorded_at', [deviceId])
  t.same(stored.map((r) => [r.ms - at, r.value, r.raw_value]), [[0, 0.1, 0.05], [1, -7, -3.5], [2, 3, 1.5]])
})
