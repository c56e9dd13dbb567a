import t from 'tap'
import { loadEngine, postgresRunner, type ReadingRow, ReadingsWriter } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'

t.test('group commit: concurrent writes share transactions, each learns its own result, first write wins', async (t) => {
  const database = await createTestDatabase(t)
  const writer = new ReadingsWriter(database, await loadEngine(postgresRunner(database.sql)), { concurrency: 1 })
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const devices = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) select ${user?.id ?? 0}, 'd' from generate_series(1, 3) returning id`
  const at = (minute: number): Date => new Date(Date.UTC(2026, 5, 1, 0, minute))
  const row = (device: number, minute: number, value: number): ReadingRow => ({ deviceId: device, sensorId: 55, recordedAt: at(minute), value, rawValue: value })
  const [a = 0, b = 0, c = 0] = devices.map((d) => d.id)
  // Five writes at once: the first runs alone, the other four wait and go together.
  const results = await Promise.all([
    writer.write([row(a, 0, 1)]),
    writer.write([row(a, 1, 2), row(b, 1, 3)]),
    writer.write([row(a, 1, 99), row(c, 2, 4)]),
    writer.write([row(b, 1, 98)]),
    writer.write([row(c, 3, 5), row(c, 3, 97)].slice(0, 1))
  ])
  t.same(results.map((r) => [r.stored, r.duplicates]), [[1, 0], [2, 0], [1, 1], [0, 1], [1, 0]])
  const stored = await database.sql`select device_id, extract(minute from recorded_at)::int as minute, value from readings order by device_id, recorded_at`
  t.same(stored.map((r) => [r.device_id, r.minute, r.value]), [[a, 0, 1], [a, 1, 2], [b, 1, 3], [c, 2, 4], [c, 3, 5]], 'the earlier write of a time wins')
  const latest = await database.sql`select device_id, value, prev_value from latest_readings order by device_id`
  t.same(latest.map((r) => [r.device_id, r.value, r.prev_value]), [[a, 2, 1], [b, 3, null], [c, 5, 4]])
})

t.test('one failing write does not fail the writes it was grouped with', async (t) => {
  const database = await createTestDatabase(t)
  const writer = new ReadingsWriter(database, await loadEngine(postgresRunner(database.sql)), { concurrency: 1 })
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const good = (minute: number): ReadingRow => ({ deviceId: device?.id ?? 0, sensorId: 55, recordedAt: new Date(Date.UTC(2026, 5, 1, 0, minute)), value: 1, rawValue: 1 })
  const gone: ReadingRow = { deviceId: 999_999, sensorId: 55, recordedAt: new Date(Date.UTC(2026, 5, 1)), value: 1, rawValue: 1 }
  const outcomes = await Promise.allSettled([writer.write([good(0)]), writer.write([good(1)]), writer.write([gone]), writer.write([good(2)])])
  t.same(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
  const [count] = await database.sql`select count(*)::int as n from readings`
  t.equal(count?.n, 3)
})

t.test('a write the database fails inside its transaction stores nothing, fails alone, and leaves no connection in a transaction', async (t) => {
  const database = await createTestDatabase(t)
  const writer = new ReadingsWriter(database, await loadEngine(postgresRunner(database.sql)), { concurrency: 1 })
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('w', 'w@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  // A failure the checks before the transaction cannot see: the database refuses one value.
  await database.sql.unsafe(`
    create function refuse_666() returns trigger language plpgsql as $$
    begin if new.value = 666 then raise exception 'refused'; end if; return new; end $$;
    create trigger refuse_666 before insert on readings for each row execute function refuse_666()`)
  const reading = (minute: number, value: number): ReadingRow => ({ deviceId: device?.id ?? 0, sensorId: 55, recordedAt: new Date(Date.UTC(2026, 5, 1, 0, minute)), value, rawValue: value })
  const outcomes = await Promise.allSettled([writer.write([reading(0, 1)]), writer.write([reading(1, 2)]), writer.write([reading(2, 666)]), writer.write([reading(3, 4)])])
  t.same(outcomes.map((o) => o.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'])
  const [state] = await database.sql`select (select count(*)::int from readings) as n, (select sum(count)::int from readings_hourly) as hourly, (select value from latest_readings) as latest`
  t.same({ ...state }, { n: 3, hourly: 3, latest: 4 }, 'the refused value left no trace in the tiers or the latest values')
  const open = await database.sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`
  t.equal(open[0]?.n, 0)
  const later = await Promise.all(Array.from({ length: 20 }, async (_, i) => await writer.write([reading(10 + i, i)])))
  t.same(later.map((r) => r.stored), Array(20).fill(1), 'the pool serves later writes')
})
