import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { dayOffsetTiers, nativeEngine, openPlatformDatabase, postgresRunner, type ReadingRow, registerDayOffsets, writeReadings } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'

/**
 * The wall clocks' daily tiers (migration 0007) on a real PostgreSQL: registered at start from the
 * offsets given, filled once, and exact while writes run during the fill: every reading counted
 * once, whether the fill or the write put it there.
 */

const HOUR = 3_600_000

t.test('the platform registers the offsets it is given, whole hours only, once', async (t) => {
  const database = await createTestDatabase(t)
  const dataDir = mkdtempSync(path.join(tmpdir(), 'esp-offsets-'))
  t.teardown(() => { rmSync(dataDir, { recursive: true, force: true }) })
  const logged: string[] = []
  for (let i = 0; i < 2; i++) {
    const opened = await openPlatformDatabase({ url: database.url, dataDir, poolMax: 1, applicationName: 'esp-test', dayOffsetsMs: [HOUR, 2 * HOUR, 0, HOUR / 2, -5 * HOUR], log: (m) => logged.push(m) })
    await opened.close()
  }
  const rows = await database.sql<{ offset_minutes: number }[]>`select offset_minutes from readings_day_offsets order by 1`
  t.same(rows.map((r) => r.offset_minutes), [-300, 60, 120], 'UTC has its daily tier already; half an hour cannot come from hours')
  t.equal(logged.filter((m) => m.startsWith('filled the daily tier')).length, 3, 'each filled once')
  t.same([...(await dayOffsetTiers(postgresRunner(database.sql))).keys()].sort((a, b) => a - b), [-5 * HOUR, HOUR, 2 * HOUR])
})

t.test('writes running while an offset is registered are counted once', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('o', 'o@example.org') returning id`
  const devices = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) select ${user?.id ?? 0}, 'd' || i from generate_series(1, 3) as i returning id`
  const engine = nativeEngine()
  const start = Date.UTC(2026, 2, 20)
  await engine.prepare(postgresRunner(database.sql), [new Date(start), new Date(start + 40 * 24 * HOUR)])
  let seed = 11
  const random = (): number => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 4_294_967_296 }
  const batch = (): ReadingRow[] => {
    const deviceId = devices[Math.floor(random() * devices.length)]?.id ?? 0
    const at = start + Math.floor(random() * 30 * 24) * HOUR + Math.floor(random() * HOUR)
    return [55, 56].map((sensorId) => ({ deviceId, sensorId, recordedAt: new Date(at), value: Math.round(random() * 1000) / 10, rawValue: 0 }))
  }
  // Four writers, one batch a transaction; the offsets are registered while they run.
  const progress = { written: 0 }
  let hundredth = (): void => {}
  const hundredWritten = new Promise<void>((resolve) => { hundredth = resolve })
  const writer = async (): Promise<void> => {
    for (let i = 0; i < 150; i++) {
      await database.sql.begin(async (tx) => { await writeReadings(postgresRunner(tx), engine, batch()) })
      if (++progress.written === 100) hundredth()
    }
  }
  const writers = Promise.all([writer(), writer(), writer(), writer()])
  await hundredWritten
  t.same(await registerDayOffsets(database.sql, [HOUR, 2 * HOUR]), [HOUR, 2 * HOUR])
  const writtenAtRegistration = progress.written
  await writers
  t.ok(writtenAtRegistration >= 100 && writtenAtRegistration < 600, `registered after ${writtenAtRegistration} of 600 writes`)
  // Each shifted day's count and sum against the raw rows grouped the same way.
  const wrong = await database.sql<{ offset_minutes: number, device_id: number, sensor_id: number, bucket: Date }[]>`
    with raw as (
      select o.offset_minutes, r.device_id, r.sensor_id,
        date_bin('1 day', r.recorded_at, timestamptz '2000-01-01T00:00:00Z' - o.offset_minutes * interval '1 minute') as bucket,
        count(*) as count, sum(r.value) as sum, min(r.value) as min, max(r.value) as max
      from readings r cross join readings_day_offsets o
      group by 1, 2, 3, 4
    )
    select coalesce(raw.offset_minutes, t.offset_minutes) as offset_minutes, coalesce(raw.device_id, t.device_id) as device_id,
      coalesce(raw.sensor_id, t.sensor_id) as sensor_id, coalesce(raw.bucket, t.bucket) as bucket
    from raw full join readings_daily_offset t using (offset_minutes, device_id, sensor_id, bucket)
    where raw.count is distinct from t.count or abs(raw.sum - t.sum) > 1e-9 * greatest(1, abs(raw.sum)) or raw.min is distinct from t.min or raw.max is distinct from t.max`
  t.same(wrong, [], 'every shifted day holds exactly its readings')
  const [days] = await database.sql<{ n: number }[]>`select count(*)::int as n from readings_daily_offset`
  t.ok((days?.n ?? 0) > 100, `${days?.n ?? 0} shifted days compared`)
})
