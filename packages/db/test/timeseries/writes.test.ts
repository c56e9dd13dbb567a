import t from 'tap'
import { ensureComponents, KnownComponents, nativeEngine, postgresRunner, type ReadingRow, writeReadings } from '@esp/db'
import { createTestDatabase, rawInsertSteps, recordingRunner as recording } from '@esp/db/testing'

/**
 * The raw insert of the write path: a binary COPY in a savepoint where the driver can stream one,
 * and `ON CONFLICT DO NOTHING` when the COPY meets a stored reading. Real PostgreSQL.
 */

t.test('the rows go in by binary COPY, exactly as given, with no conflict handling when all are new', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const deviceId = device?.id ?? 0
  // Times on both sides of PostgreSQL's epoch (2000) and of 2^32 microseconds, with milliseconds;
  // values that text would round or spell differently.
  const times = ['1990-01-01T00:00:00.000Z', '1999-12-31T23:59:59.999Z', '2000-01-01T00:00:00.000Z', '2000-01-01T01:11:34.967Z', '2026-11-23T12:34:56.789Z', '2099-12-31T23:59:59.001Z']
  const values = [0.1, -273.15, 1e-300, 1.7976931348623157e308, 101325.00999999999, 42]
  const rows: ReadingRow[] = times.map((at, i) => ({ deviceId, sensorId: 55, recordedAt: new Date(at), value: values[i] ?? 0, rawValue: -(values[i] ?? 0) / 3 }))
  const engine = nativeEngine()
  await engine.prepare(postgresRunner(database.sql), rows.map((r) => r.recordedAt))
  const { result, log } = await database.sql.begin(async (tx) => {
    const { runner, log } = recording(postgresRunner(tx))
    return { result: await writeReadings(runner, engine, [...rows].reverse()), log }
  })
  t.same([result.stored, result.duplicates], [6, 0])
  t.same(rawInsertSteps(log), ['copy readings'], 'copied: no rollback, no INSERT of raw rows')
  const stored = await database.sql<{ at: string, value: number, raw_value: number }[]>`
    select to_char(recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at, value, raw_value from readings where device_id = ${deviceId} order by recorded_at`
  t.same(stored.map((r) => r.at), times)
  t.same(stored.map((r) => r.value), values)
  t.same(stored.map((r) => r.raw_value), values.map((v) => -v / 3))
  const [latest] = await database.sql<{ value: number, prev_value: number }[]>`select value, prev_value from latest_readings where device_id = ${deviceId}`
  t.same([latest?.value, latest?.prev_value], [42, 101325.00999999999], 'latest values came from the copied rows')
  const [daily] = await database.sql<{ n: number }[]>`select sum(count)::int as n from readings_daily where device_id = ${deviceId}`
  t.equal(daily?.n, 6, 'the tiers took every copied row')
})

t.test('a stored reading makes the COPY fall back: first write wins, only the new rows count', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const deviceId = device?.id ?? 0
  const row = (minute: number, value: number): ReadingRow => ({ deviceId, sensorId: 55, recordedAt: new Date(Date.UTC(2026, 5, 1, 0, minute)), value, rawValue: value })
  const engine = nativeEngine()
  await engine.prepare(postgresRunner(database.sql), [row(0, 0).recordedAt])
  const write = async (rows: ReadingRow[]): Promise<{ stored: number, duplicates: number, log: string[] }> => await database.sql.begin(async (tx) => {
    const { runner, log } = recording(postgresRunner(tx))
    const { stored, duplicates } = await writeReadings(runner, engine, rows)
    return { stored, duplicates, log }
  })
  const first = await write([row(0, 1), row(1, 2), row(2, 3)])
  t.same([first.stored, first.duplicates], [3, 0])
  // The stored minute 1 sits in the middle: the COPY has written minute 0 again before it fails.
  const again = await write([row(3, 40), row(1, 99), row(4, 50), row(0, 98)])
  t.same([again.stored, again.duplicates], [2, 2])
  t.same(rawInsertSteps(again.log), ['copy readings', 'rollback to savepoint', 'insert into readings'])
  const stored = await database.sql<{ minute: number, value: number }[]>`
    select extract(minute from recorded_at)::int as minute, value from readings where device_id = ${deviceId} order by recorded_at`
  t.same(stored.map((r) => [r.minute, r.value]), [[0, 1], [1, 2], [2, 3], [3, 40], [4, 50]], 'stored readings kept their values')
  const [hourly] = await database.sql<{ n: number, sum: number }[]>`select sum(count)::int as n, sum(sum)::float8 as sum from readings_hourly where device_id = ${deviceId}`
  t.same([hourly?.n, hourly?.sum], [5, 96], 'the tiers count each reading once')
  const [latest] = await database.sql<{ value: number, prev_value: number }[]>`select value, prev_value from latest_readings where device_id = ${deviceId}`
  t.same([latest?.value, latest?.prev_value], [50, 40])
})

t.test('two transactions copying the same readings at once: one stores them, the other counts duplicates', async (t) => {
  const database = await createTestDatabase(t, { max: 4 })
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const rows = Array.from({ length: 2000 }, (_, i): ReadingRow => ({ deviceId: device?.id ?? 0, sensorId: 55, recordedAt: new Date(Date.UTC(2026, 5, 1) + i * 60_000), value: i, rawValue: i }))
  const engine = nativeEngine()
  await engine.prepare(postgresRunner(database.sql), rows.map((r) => r.recordedAt))
  const results = await Promise.all([0, 1].map(async () => await database.sql.begin(async (tx) => await writeReadings(postgresRunner(tx), engine, rows))))
  t.same(results.map((r) => r.stored).sort((a, b) => a - b), [0, 2000])
  t.same(results.map((r) => r.duplicates).sort((a, b) => a - b), [0, 2000])
  const [count] = await database.sql<{ n: number, tier: number }[]>`
    select (select count(*)::int from readings) as n, (select sum(count)::int from readings_hourly) as tier`
  t.same([count?.n, count?.tier], [2000, 2000])
})

t.test('an error that is not a duplicate fails the write after the fallback too, and nothing is written', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const deviceId = device?.id ?? 0
  // 2041 has no partition (prepare was not asked for it), so the COPY fails and so does the INSERT.
  const rows: ReadingRow[] = [{ deviceId, sensorId: 55, recordedAt: new Date(Date.UTC(2041, 0, 1)), value: 1, rawValue: 1 }]
  let log: string[] = []
  await t.rejects(database.sql.begin(async (tx) => {
    const recorded = recording(postgresRunner(tx))
    log = recorded.log
    return await writeReadings(recorded.runner, nativeEngine(), rows)
  }), { code: '23514' })
  t.same(rawInsertSteps(log), ['copy readings', 'rollback to savepoint', 'insert into readings'])
  const [count] = await database.sql<{ n: number, components: number }[]>`
    select (select count(*)::int from readings) as n, (select count(*)::int from components where device_id = ${deviceId}) as components`
  t.same([count?.n, count?.components], [0, 0])
  t.same(await database.sql`select 1 as ok`, [{ ok: 1 }], 'the pool still works')
})

t.test('rows that repeat a reading within one write: the first is stored, by COPY, and the rest count as duplicates', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const row = (minute: number, value: number): ReadingRow => ({ deviceId: device?.id ?? 0, sensorId: 55, recordedAt: new Date(Date.UTC(2026, 5, 1, 0, minute)), value, rawValue: value })
  const engine = nativeEngine()
  await engine.prepare(postgresRunner(database.sql), [row(0, 0).recordedAt])
  const { result, log } = await database.sql.begin(async (tx) => {
    const { runner, log } = recording(postgresRunner(tx))
    return { result: await writeReadings(runner, engine, [row(2, 1), row(1, 2), row(2, 3), row(1, 4), row(0, 5)]), log }
  })
  t.same([result.stored, result.duplicates], [3, 2])
  t.same(rawInsertSteps(log), ['copy readings'])
  const stored = await database.sql<{ minute: number, value: number }[]>`select extract(minute from recorded_at)::int as minute, value from readings order by recorded_at`
  t.same(stored.map((r) => [r.minute, r.value]), [[0, 5], [1, 2], [2, 1]])
})

t.test('components: ensured once on their own and remembered; the write transaction inserts only what is not known, and remembers nothing', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const deviceId = device?.id ?? 0
  const row = (sensorId: number, minute: number): ReadingRow => ({ deviceId, sensorId, recordedAt: new Date(Date.UTC(2026, 5, 1, 0, minute)), value: 1, rawValue: 1 })
  const engine = nativeEngine()
  await engine.prepare(postgresRunner(database.sql), [row(55, 0).recordedAt])
  const known = new KnownComponents()
  const first = recording(postgresRunner(database.sql))
  await ensureComponents(first.runner, [row(55, 0), row(56, 0), row(55, 1)], known)
  t.same(first.log, ['insert into components'])
  t.ok(known.has(deviceId, 55) && known.has(deviceId, 56), 'remembered once committed')
  const again = recording(postgresRunner(database.sql))
  await ensureComponents(again.runner, [row(56, 2), row(55, 2)], known)
  t.same(again.log, [], 'nothing to insert')
  // 58 is new: the transaction inserts it, rolls back, and it is neither stored nor remembered.
  await t.rejects(database.sql.begin(async (tx) => {
    const { runner, log } = recording(postgresRunner(tx))
    await writeReadings(runner, engine, [row(55, 3), row(58, 3)], known)
    t.same(log.filter((step) => step.includes('components')), ['insert into components'])
    throw new Error('roll back')
  }), { message: 'roll back' })
  t.notOk(known.has(deviceId, 58))
  const components = await database.sql<{ sensor_id: number }[]>`select sensor_id from components where device_id = ${deviceId} order by sensor_id`
  t.same(components.map((c) => c.sensor_id), [55, 56])
})

t.test('known components stay under their cap of devices, forgetting the least recently written first', async (t) => {
  const known = new KnownComponents(3)
  let most = 0
  let lostTheOneInUse = 0
  for (let device = 1; device <= 1000; device++) {
    known.add(device, 55)
    known.add(device, 56)
    most = Math.max(most, known.devices)
    // Device 1 is written all along: it is never the one forgotten.
    if (!known.has(1, 55)) lostTheOneInUse++
  }
  t.equal(most, 3, 'never more than the cap')
  t.equal(lostTheOneInUse, 0)
  t.ok(known.has(1, 55) && known.has(1, 56), 'the device in use is kept')
  t.ok(known.has(1000, 56) && known.has(999, 55), 'the newest are kept')
  t.notOk(known.has(2, 55), 'an old one is forgotten')
})

t.test('a write in a frame of its own takes three round trips: BEGIN with the COPY\'s start, the rows, everything else with COMMIT', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const row = (sensorId: number, minute: number): ReadingRow => ({ deviceId: device?.id ?? 0, sensorId, recordedAt: new Date(Date.UTC(2026, 5, 1, 0, minute)), value: minute, rawValue: minute })
  const engine = nativeEngine()
  await engine.prepare(postgresRunner(database.sql), [row(55, 0).recordedAt])
  const frame = { before: [{ text: 'begin' }], after: [{ text: 'commit' }] }
  const connection = await database.sql.reserve()
  t.teardown(() => { connection.release() })
  const first = recording(postgresRunner(connection))
  const result = await writeReadings(first.runner, engine, [row(55, 0), row(56, 0), row(55, 1)], undefined, frame)
  t.same([result.stored, result.duplicates], [3, 0])
  t.equal(first.trips(), 3)
  t.same(first.log, ['begin', 'insert into components', 'savepoint esp_readings_copy', 'copy readings', 'release savepoint esp_readings_copy',
    'insert into readings_daily', 'insert into readings_hourly', 'insert into readings_daily_offset', 'insert into latest_readings', 'update devices d', 'commit'])
  const [state] = await database.sql`select (select count(*)::int from readings) as n, (select sum(count)::int from readings_hourly) as hourly, (select state from devices where id = ${device?.id ?? 0}) as state`
  t.same({ ...state }, { n: 3, hourly: 3, state: 'has_published' }, 'committed')

  // A stored reading: the savepoint is rolled back with the INSERT that replaces the COPY, one round trip more.
  const again = recording(postgresRunner(connection))
  const second = await writeReadings(again.runner, engine, [row(55, 1), row(55, 2)], undefined, frame)
  t.same([second.stored, second.duplicates], [1, 1])
  t.equal(again.trips(), 4)
  t.same(rawInsertSteps(again.log), ['copy readings', 'rollback to savepoint', 'insert into readings'])
  // A transaction left open would hold the id its writes took.
  const [inTransaction] = await connection`select pg_current_xact_id_if_assigned() is null as outside`
  t.equal(inTransaction?.outside, true, 'the connection is left outside any transaction')
})

t.test('a statement that fails before the COPY is the error the write reports, not the aborted transaction after it', async (t) => {
  const database = await createTestDatabase(t)
  const engine = nativeEngine()
  const at = new Date(Date.UTC(2026, 5, 1))
  await engine.prepare(postgresRunner(database.sql), [at])
  const connection = await database.sql.reserve()
  t.teardown(() => { connection.release() })
  // No such device: its component cannot be inserted, ahead of the COPY in the first round trip.
  const write = writeReadings(postgresRunner(connection), engine, [{ deviceId: 999_999, sensorId: 55, recordedAt: at, value: 1, rawValue: 1 }], undefined,
    { before: [{ text: 'begin' }], after: [{ text: 'commit' }] })
  await t.rejects(write, { code: '23503' })
  await connection`rollback`
  const [count] = await connection<{ n: number }[]>`select count(*)::int as n from readings`
  t.equal(count?.n, 0)
})
