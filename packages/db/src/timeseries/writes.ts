import { pgDate, type ReadingRow, type Runner, type TimeSeriesEngine } from './engine.js'

export interface WriteResult {
  stored: number
  duplicates: number
  /** the rows actually inserted, for whatever runs after the commit (live MQTT, forwarding) */
  inserted: ReadingRow[]
}

interface InsertedRow { sensor_id: number, recorded_at: unknown, value: number, raw_value: number }

/**
 * The one write path for readings of one device (HTTP, MQTT, CSV import), in the caller's
 * transaction, in a fixed number of statements whatever the batch size:
 * components, raw rows (idempotent: first write wins), tiers, latest values, the device.
 * Rows must be unique per (sensor, recorded_at); they are sorted here so that concurrent batches
 * take row locks in the same order.
 */
export async function writeReadings (tx: Runner, engine: TimeSeriesEngine, deviceId: number, rows: ReadingRow[]): Promise<WriteResult> {
  if (rows.length === 0) return { stored: 0, duplicates: 0, inserted: [] }
  const sorted = [...rows].sort((a, b) => a.sensorId - b.sensorId || a.recordedAt.getTime() - b.recordedAt.getTime())
  const sensorIds = [...new Set(sorted.map((r) => r.sensorId))]
  await tx.query(
    'insert into components (device_id, sensor_id) select $1, s from unnest($2::int[]) as s on conflict (device_id, sensor_id) do nothing',
    [deviceId, sensorIds])
  const insertedRows = await tx.query<InsertedRow>(`
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select $1, * from unnest($2::int[], $3::timestamptz[], $4::float8[], $5::float8[])
    on conflict (device_id, sensor_id, recorded_at) do nothing
    returning sensor_id, recorded_at, value, raw_value`,
  [deviceId, sorted.map((r) => r.sensorId), sorted.map((r) => r.recordedAt), sorted.map((r) => r.value), sorted.map((r) => r.rawValue)])
  const inserted: ReadingRow[] = insertedRows.map((r) => ({ deviceId, sensorId: r.sensor_id, recordedAt: pgDate(r.recorded_at), value: r.value, rawValue: r.raw_value }))
  if (inserted.length === 0) return { stored: 0, duplicates: rows.length, inserted }

  await engine.afterInsert(tx, inserted)
  await moveLatest(tx, deviceId, inserted)
  const newest = inserted.reduce((max, r) => r.recordedAt > max ? r.recordedAt : max, inserted[0]?.recordedAt ?? new Date(0))
  await tx.query(`
    update devices set last_reading_at = greatest(last_reading_at, $2::timestamptz),
      state = case when state = 'archived' then state else 'has_published' end
    where id = $1`, [deviceId, newest])
  return { stored: inserted.length, duplicates: rows.length - inserted.length, inserted }
}

/**
 * Latest and previous value per sensor move forward only when the new reading is newer than the
 * stored latest one: backfilled history never overwrites them. The batch's own second newest
 * reading becomes the previous one when it is newer than the stored latest.
 */
async function moveLatest (tx: Runner, deviceId: number, inserted: ReadingRow[]): Promise<void> {
  const bySensor = new Map<number, { newest: ReadingRow, second: ReadingRow | undefined }>()
  for (const row of inserted) {
    const entry = bySensor.get(row.sensorId)
    if (entry === undefined) bySensor.set(row.sensorId, { newest: row, second: undefined })
    else if (row.recordedAt > entry.newest.recordedAt) { entry.second = entry.newest; entry.newest = row } else if (entry.second === undefined || row.recordedAt > entry.second.recordedAt) entry.second = row
  }
  const entries = [...bySensor.entries()].sort((a, b) => a[0] - b[0])
  await tx.query(`
    insert into latest_readings as l (device_id, sensor_id, recorded_at, value, raw_value, prev_recorded_at, prev_value, prev_raw_value)
    select $1, * from unnest($2::int[], $3::timestamptz[], $4::float8[], $5::float8[], $6::timestamptz[], $7::float8[], $8::float8[])
    on conflict (device_id, sensor_id) do update set
      prev_recorded_at = case when excluded.prev_recorded_at > l.recorded_at then excluded.prev_recorded_at else l.recorded_at end,
      prev_value = case when excluded.prev_recorded_at > l.recorded_at then excluded.prev_value else l.value end,
      prev_raw_value = case when excluded.prev_recorded_at > l.recorded_at then excluded.prev_raw_value else l.raw_value end,
      recorded_at = excluded.recorded_at, value = excluded.value, raw_value = excluded.raw_value, added_at = now()
    where excluded.recorded_at > l.recorded_at`,
  [deviceId, entries.map(([id]) => id), entries.map(([, e]) => e.newest.recordedAt), entries.map(([, e]) => e.newest.value), entries.map(([, e]) => e.newest.rawValue),
    entries.map(([, e]) => e.second?.recordedAt ?? null), entries.map(([, e]) => e.second?.value ?? null), entries.map(([, e]) => e.second?.rawValue ?? null)])
  await tx.query(`
    update components c set last_reading_at = greatest(c.last_reading_at, n.at)
    from unnest($2::int[], $3::timestamptz[]) as n(sensor_id, at)
    where c.device_id = $1 and c.sensor_id = n.sensor_id`,
  [deviceId, entries.map(([id]) => id), entries.map(([, e]) => e.newest.recordedAt)])
}
