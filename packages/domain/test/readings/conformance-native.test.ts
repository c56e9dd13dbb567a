import t from 'tap'
import { loadEngine, postgresRunner } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ingestReadings, parseRollup, ReadingsWriter, readingsHistory, referenceAggregate } from '@esp/domain'
import { checkConformance } from './conformance.js'

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
