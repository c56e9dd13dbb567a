import t from 'tap'
import { mergeIngestStatus, pgDate } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { IngestStatusLog, keptProblems, noneSkipped } from '@esp/domain'

const at = (second: number): Date => new Date(Date.UTC(2026, 10, 28, 0, 12, second))
const skipped = (...refs: Array<number | string>) => {
  const s = noneSkipped()
  for (const ref of refs) { s.count++; s.sensors.add(ref) }
  return s
}

async function devices (database: Awaited<ReturnType<typeof createTestDatabase>>, n: number): Promise<number[]> {
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values (${`s${n}`}, ${`s${n}@example.org`}) returning id`
  const rows = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) select ${user?.id ?? 0}, 'd' from generate_series(1, ${n}) returning id`
  return rows.map((r) => r.id)
}

const statusOf = async (database: Awaited<ReturnType<typeof createTestDatabase>>, id: number) =>
  (await database.sql`select last_problem_at, unknown_sensors, skipped_values::int as skipped, rejected_messages::int as rejected, last_rejection
    from device_ingest_status where device_id = ${id}`)[0]

t.test('notes are merged in memory and written for every device by one statement, only when flushed', async (t) => {
  const database = await createTestDatabase(t)
  const [a = 0, b = 0] = await devices(database, 2)
  const log = new IngestStatusLog(database, { intervalMs: 60_000 })
  for (let i = 0; i < 50; i++) log.skipped(a, at(i), skipped(99999))
  log.skipped(a, at(50), skipped('co2x', 99999))
  log.rejected(b, at(1), 'too_old', { 'data[0].recorded_at': ['is before 1990-01-01T00:00:00Z, the oldest time accepted'] })
  log.rejected(b, at(2), 'unreadable', { payload: ["the payload must start with '{' but found \"x\" at position 0"] })
  t.equal((await database.sql`select count(*)::int as n from device_ingest_status`)[0]?.n, 0, 'nothing written before the flush')
  const statements: string[] = []
  const counting = new Proxy(database.sql, { apply: (target, self, args: unknown[]) => { statements.push(String(args[0])); return Reflect.apply(target, self, args) } })
  const counted = new IngestStatusLog({ db: database.db, sql: counting }, { intervalMs: 60_000 })
  counted.skipped(a, at(51), skipped(1))
  counted.skipped(b, at(51), skipped(2))
  await counted.flush()
  t.equal(statements.length, 1, 'two devices, one statement')
  await log.flush()
  t.match(await statusOf(database, a), { unknown_sensors: [99999, 'co2x', 1], skipped: 53, rejected: 0, last_rejection: null })
  t.match(await statusOf(database, b), {
    unknown_sensors: [2],
    skipped: 1,
    rejected: 2,
    last_rejection: { at: '2026-11-28T00:12:02.000Z', reason: 'unreadable', problems: { payload: [/must start with/] } }
  })
  await log.flush()
  t.match(await statusOf(database, a), { skipped: 53 }, 'a flush with nothing noted writes nothing')
})

t.test('the stored status stays bounded: 20 sensors, the latest first; the later rejection wins', async (t) => {
  const database = await createTestDatabase(t)
  const [a = 0] = await devices(database, 1)
  const delta = (second: number, unknownSensors: Array<number | string>, rejection: string | null) => ({
    deviceId: a,
    at: at(second),
    unknownSensors,
    skippedValues: unknownSensors.length,
    rejectedMessages: rejection === null ? 0 : 1,
    lastRejection: rejection === null ? null : { at: at(second).toISOString(), reason: rejection, problems: {} }
  })
  await mergeIngestStatus(database, [delta(10, Array.from({ length: 15 }, (_, i) => 1000 + i), 'invalid')])
  await mergeIngestStatus(database, [delta(20, [2000, 2001, 1000, 'key'], null)])
  // A process whose notes are older merges after a newer one: its rejection does not win.
  await mergeIngestStatus(database, [delta(5, [], 'too_old')])
  const status = await statusOf(database, a)
  t.same(status?.unknown_sensors, [2000, 2001, 1000, 'key', ...Array.from({ length: 14 }, (_, i) => 1001 + i)], 'the new ones first, then the kept ones, each once')
  t.equal(status?.skipped, 19)
  t.equal(status?.rejected, 2)
  t.match(status?.last_rejection, { reason: 'invalid' })
  t.same(pgDate(status?.last_problem_at), at(20))
  await mergeIngestStatus(database, [delta(30, Array.from({ length: 30 }, (_, i) => 5000 + i), null)])
  const full = await statusOf(database, a)
  t.same(full?.unknown_sensors, Array.from({ length: 20 }, (_, i) => 5000 + i), 'at most 20')
  await database.sql`delete from devices where id = ${a}`
  await mergeIngestStatus(database, [delta(40, [1], null)])
  t.equal((await database.sql`select count(*)::int as n from device_ingest_status`)[0]?.n, 0, 'a deleted device is left out, and its status went with it')
})

t.test('a failed merge keeps its notes for the next one', async (t) => {
  const database = await createTestDatabase(t)
  const [a = 0] = await devices(database, 1)
  let fail = true
  const errors: unknown[] = []
  const flaky = new Proxy(database.sql, {
    apply: (target, self, args: unknown[]) => {
      if (fail) return Promise.reject(new Error('connection lost'))
      return Reflect.apply(target, self, args)
    }
  })
  const log = new IngestStatusLog({ db: database.db, sql: flaky }, { intervalMs: 60_000, onError: (err) => { errors.push(err) } })
  log.rejected(a, at(1), 'invalid', { 'data[0].sensors[0].value': ['must be a finite number'] })
  await log.flush()
  t.equal(errors.length, 1)
  fail = false
  log.skipped(a, at(2), skipped(7))
  await log.flush()
  t.match(await statusOf(database, a), { unknown_sensors: [7], skipped: 1, rejected: 1, last_rejection: { reason: 'invalid' } })
})

t.test('notes flush by themselves after the interval, and a refusal keeps only its first problems, shortened', async (t) => {
  const database = await createTestDatabase(t)
  const [a = 0] = await devices(database, 1)
  const log = new IngestStatusLog(database, { intervalMs: 20 })
  log.skipped(a, at(1), skipped(3))
  for (let i = 0; i < 100 && (await statusOf(database, a)) === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  t.match(await statusOf(database, a), { unknown_sensors: [3] })
  const many = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`data[${i}].recorded_at`, ['x'.repeat(1000), 'b', 'c', 'd']]))
  const kept = keptProblems(many)
  t.equal(Object.keys(kept).length, 10)
  t.equal(kept['data[0].recorded_at']?.length, 3)
  t.equal(kept['data[0].recorded_at']?.[0]?.length, 200)
})
