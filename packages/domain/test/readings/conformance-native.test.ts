import t from 'tap'
import { dayOffsetTiers, loadEngine, postgresRunner, ReadingsWriter, registerDayOffsets } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { dayOffsetsOfZones, ingestReadings, inZone, parseRollup, parseTimeZone, readingsHistory, referenceAggregate, rollupFunctions } from '@esp/domain'
import { answersInRuns, checkConformance, ZONES } from './conformance.js'

/**
 * Conformance of the native engine (real PostgreSQL): readings written through the one write path
 * in random batches (late, duplicated, out of order, sparse) answer every function and rollup
 * exactly as a plain computation over the raw rows does.
 */
const START = Date.UTC(2025, 0, 1)
const SPAN = 400 * 24 * 3600 * 1000

t.test('native engine = reference, for every function and rollup', async (t) => {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  t.equal(engine.name, 'native')
  // The zones' whole-hour offsets have daily tiers of their own, kept by every write below.
  const registered = await registerDayOffsets(database.sql, dayOffsetsOfZones(ZONES))
  t.same(registered.map((ms) => ms / 3_600_000), [-5, -4, 1, 2, 10, 11], 'New York, Madrid, Sydney and Lord Howe (+11) offsets; Kolkata, Kathmandu and Lord Howe +10:30 are not whole hours')
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('conformance', 'c@example.org') returning id`
  const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => new Date(START + SPAN + 86_400_000), limits: { maxValues: 100_000, maxFutureMs: 86_400_000, minTime: new Date(0) } }
  const runs = await checkConformance({
    runner: postgresRunner(database.sql),
    newDevice: async () => (await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'c') returning id`)[0]?.id ?? 0,
    // Through the real ingest path: validation, first-wins de-duplication, one transaction.
    write: async (deviceId, batch) => {
      await ingestReadings(ctx, { id: deviceId, kitId: null, ownerId: user?.id ?? 0, isPrivate: false, forwardingToken: null }, batch.map((e) => ({ recorded_at: new Date(e.at).toISOString(), sensors: [{ id: e.sensor, value: e.value }] })))
    },
    settle: async () => {}
  }, 30)
  t.equal(runs, 30)
  t.ok(answersInRuns.streamed > 0 && answersInRuns.whole > 0, `in runs of a few buckets: ${answersInRuns.streamed} answers streamed, ${answersInRuns.whole} whole`)
})

t.test("a wall clock's daily tier filled from the hourly one answers as the raw rows do", async (t) => {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('fill', 'f@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'f') returning id`
  // Irregular readings over 14 months, across both changes of the clocks, written before the
  // offsets are registered: the tier is filled from the hourly one.
  let seed = 5
  const random = (): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 4_294_967_296 }
  const points: { at: number, value: number }[] = []
  for (let at = START; at < START + 425 * 86_400_000; at += Math.floor(random() * 7 * 3_600_000) + 60_000) points.push({ at, value: Math.round((random() * 200 - 100) * 1000) / 1000 })
  const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => new Date(START + 430 * 86_400_000), limits: { maxValues: 100_000, maxFutureMs: 0, minTime: new Date(0) } }
  const owner = { id: device?.id ?? 0, kitId: null, ownerId: user?.id ?? 0, isPrivate: false, forwardingToken: null }
  await ingestReadings(ctx, owner, points.map((p) => ({ recorded_at: new Date(p.at).toISOString(), sensors: [{ id: 55, value: p.value }] })))
  const zones = ['Europe/Madrid', 'America/New_York', 'Australia/Sydney']
  t.same((await registerDayOffsets(database.sql, dayOffsetsOfZones(zones))).length, 6)
  t.same(await registerDayOffsets(database.sql, dayOffsetsOfZones(zones)), [], 'registered once')
  const [filled] = await database.sql<{ n: number }[]>`select count(*)::int as n from readings_daily_offset`
  t.ok((filled?.n ?? 0) > 6 * 400, `${filled?.n ?? 0} shifted days filled`)
  // Later writes merge into the filled tier.
  const late = [{ at: START + 40 * 86_400_000 + 1234, value: 55.5 }, { at: START + 200 * 86_400_000 + 99, value: -3.25 }]
  await ingestReadings(ctx, owner, late.map((p) => ({ recorded_at: new Date(p.at).toISOString(), sensors: [{ id: 55, value: p.value }] })))
  points.push(...late)
  points.sort((a, b) => a.at - b.at)
  const runner = postgresRunner(database.sql)
  t.equal((await dayOffsetTiers(runner)).size, 6)
  let compared = 0
  for (const zone of zones) {
    for (const rollup of ['1d', '3d', '1w', '1M', '1y']) {
      for (const fn of rollupFunctions) {
        const from = START + 3 * 3_600_000 + 17
        const to = START + 420 * 86_400_000
        const got = await readingsHistory({ runner, now: ctx.now, maxBuckets: 100_000 }, device?.id ?? 0,
          { sensor_id: '55', rollup, function: fn, from: new Date(from).toISOString(), to: new Date(to).toISOString(), timezone: zone })
        const expected = referenceAggregate(points.filter((p) => p.at >= from && p.at <= to), inZone(parseRollup(rollup), parseTimeZone(zone)), fn).reverse()
        const tuples = got.readings.tuples()
        const mismatch = expected.findIndex((e, i) => {
          const [at, value] = tuples[i] ?? []
          const want = e.value
          const approximate = fn === 'avg' || fn === 'dev' || fn === 'sum'
          return at === undefined || new Date(at).getTime() !== e.bucket || value === undefined || (value === null) !== (want === null) ||
            (value !== null && want !== null && (approximate ? Math.abs(value - want) > 1e-9 * Math.max(1, Math.abs(want)) : value !== want))
        })
        t.ok(tuples.length === expected.length && mismatch === -1, `${zone} ${rollup} ${fn}: ${tuples.length} buckets${mismatch === -1 ? '' : `, first mismatch at ${mismatch}: ${JSON.stringify(tuples[mismatch])} vs ${JSON.stringify(expected[mismatch])}`}`)
        compared++
      }
    }
  }
  t.equal(compared, 3 * 5 * rollupFunctions.length)

  // The days do come from the shifted tiers: spoiled, they spoil the answer.
  const before = await readingsHistory({ runner, now: ctx.now, maxBuckets: 100_000 }, device?.id ?? 0, { sensor_id: '55', rollup: '1d', function: 'max', from: new Date(START).toISOString(), to: new Date(START + 420 * 86_400_000).toISOString(), timezone: 'Europe/Madrid' })
  await database.sql`update readings_daily_offset set max = max + 1000 where offset_minutes in (60, 120)`
  const after = await readingsHistory({ runner, now: ctx.now, maxBuckets: 100_000 }, device?.id ?? 0, { sensor_id: '55', rollup: '1d', function: 'max', from: new Date(START).toISOString(), to: new Date(START + 420 * 86_400_000).toISOString(), timezone: 'Europe/Madrid' })
  const changed = after.readings.tuples().filter(([, value], i) => value !== before.readings.tuples()[i]?.[1]).length
  t.ok(changed >= 400, `${changed} of ${after.readings.length} Madrid days read from the shifted tiers (all but the two days the clocks change and the ends)`)
})

t.test('the deviation of 101325 +- 0.01 survives every tier', async (t) => {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('dev', 'd@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'p') returning id`
  const values = Array.from({ length: 2000 }, (_, i) => 101325 + (i % 2 === 0 ? 0.01 : -0.01))
  const data = values.map((value, i) => ({ recorded_at: new Date(START + i * 60_000).toISOString(), sensors: [{ id: 58, value }] }))
  const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => new Date(START + SPAN), limits: { maxValues: 100_000, maxFutureMs: 0, minTime: new Date(0) } }
  await ingestReadings(ctx, { id: device?.id ?? 0, kitId: null, ownerId: user?.id ?? 0, isPrivate: false, forwardingToken: null }, data)
  const points = values.map((value, i) => ({ at: START + i * 60_000, value }))
  for (const rollup of ['1y', '1d', '1h', '7m']) {
    const got = await readingsHistory({ runner: postgresRunner(database.sql), now: ctx.now, maxBuckets: 100_000 }, device?.id ?? 0,
      { sensor_id: '58', rollup, function: 'dev', from: new Date(START).toISOString(), to: new Date(START + 2000 * 60_000).toISOString() })
    const expected = referenceAggregate(points, parseRollup(rollup), 'dev').reverse()
    t.equal(got.readings.length, expected.length)
    got.readings.tuples().forEach(([, dev], i) => {
      const want = expected[i]?.value ?? NaN
      t.ok(dev !== null && dev > 0.0099 && Math.abs(dev - want) <= 1e-9 * want, `${rollup}: dev ${String(dev)} = ${want}`)
    })
  }
})
