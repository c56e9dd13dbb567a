import t from 'tap'
import { bucketsPerDay, MAX_NTH_READING, nativeEngine, nthReadingTime, postgresRunner, type ReadingRow, writeReadings } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'

/**
 * What a readings request finds, counted before it reads (issue 35): the hourly tier's counts per
 * day, each hour's capped, and the n-th reading of a range, on a real PostgreSQL.
 */

const HOUR = 3_600_000
const DAY = 86_400_000
const START = Date.UTC(2026, 0, 10)

t.test('bucketsPerDay sums the capped counts of the hours that meet the range, per UTC day; nthReadingTime finds the n-th reading from either end', async (t) => {
  const database = await createTestDatabase(t)
  const runner = postgresRunner(database.sql)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('e', 'e@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const deviceId = device?.id ?? 0
  // Day 0: 90 readings in its 01:00 hour (every 40 s) and one at 23:59:59.999; day 3: one.
  const times = [...Array.from({ length: 90 }, (_, i) => START + HOUR + i * 40_000), START + DAY - 1, START + 3 * DAY + 5 * HOUR]
  const rows: ReadingRow[] = times.map((at, i) => ({ deviceId, sensorId: 55, recordedAt: new Date(at), value: i, rawValue: i }))
  const engine = nativeEngine()
  await engine.prepare(runner, rows.map((r) => r.recordedAt))
  await database.sql.begin(async (tx) => { await writeReadings(postgresRunner(tx), engine, rows) })

  const days = async (from: number, until: number, perHour: number): Promise<number[]> => [...await bucketsPerDay(runner, { deviceId, sensorId: 55, from: new Date(from), until: new Date(until), perHour })]
  t.same(await days(START, START + 5 * DAY, 60), [START, 60 + 1, START + 3 * DAY, 1], 'an hour of 90 readings holds at most 60 minutes')
  t.same(await days(START, START + 5 * DAY, 1e15), [START, 91, START + 3 * DAY, 1], 'uncapped: the readings')
  t.same(await days(START + HOUR + 30 * 60_000, START + 2 * HOUR, 1e15), [START, 90], 'an hour the range meets counts whole')
  t.same(await days(START + 2 * HOUR, START + 3 * DAY, 60), [START, 1], 'the range is half-open')
  t.same(await days(START + 4 * DAY, START + 5 * DAY, 60), [], 'no rows, no days')
  await t.rejects(bucketsPerDay(runner, { deviceId, sensorId: 55, from: new Date(START), until: new Date(START + DAY), perHour: 0 }), /bound/)

  const nth = async (n: number, newest = false, from = START, until = START + 5 * DAY): Promise<string | undefined> =>
    (await nthReadingTime(runner, { deviceId, sensorId: 55, from: new Date(from), until: new Date(until), n, newest }))?.toISOString()
  t.equal(await nth(1), new Date(START + HOUR).toISOString())
  t.equal(await nth(90), new Date(START + HOUR + 89 * 40_000).toISOString())
  t.equal(await nth(91), new Date(START + DAY - 1).toISOString(), 'to the millisecond')
  t.equal(await nth(93), undefined, 'fewer readings than n')
  t.equal(await nth(1, true), new Date(START + 3 * DAY + 5 * HOUR).toISOString())
  t.equal(await nth(2, true, START, START + 3 * DAY), new Date(START + HOUR + 89 * 40_000).toISOString(), 'from the newest of the range')
  await t.rejects(nth(0), /n from 1/)
  await t.rejects(nth(MAX_NTH_READING + 1), /n from 1/, 'the statement steps over at most MAX_NTH_READING entries')
})
