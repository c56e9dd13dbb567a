import type { ReadingRow, Runner, TimeSeriesEngine } from './engine.js'

export interface WriteResult {
  stored: number
  duplicates: number
  /** the rows actually inserted, for whatever runs after the commit (live MQTT, forwarding) */
  inserted: ReadingRow[]
}

interface InsertedKey { device_id: number, sensor_id: number, at: number }

export const readingKey = (r: Pick<ReadingRow, 'deviceId' | 'sensorId' | 'recordedAt'>): string => `${r.deviceId}:${r.sensorId}:${r.recordedAt.getTime()}`

/**
 * The one write path for readings (HTTP, MQTT, CSV import), of one or many devices, in the
 * caller's transaction, in a fixed number of statements whatever the batch size: components
 * (unless known to exist), raw rows (idempotent: first write wins), tiers, latest values, devices.
 * Rows must be unique per (device, sensor, recorded_at); they are sorted here so that concurrent
 * transactions take row locks in the same order and cannot deadlock.
 */
export async function writeReadings (tx: Runner, engine: TimeSeriesEngine, rows: ReadingRow[], knownComponents?: Set<string>): Promise<WriteResult> {
  if (rows.length === 0) return { stored: 0, duplicates: 0, inserted: [] }
  const sorted = [...rows].sort((a, b) => a.deviceId - b.deviceId || a.sensorId - b.sensorId || a.recordedAt.getTime() - b.recordedAt.getTime())
  const pairs = new Map<string, [number, number]>()
  for (const r of sorted) {
    const key = `${r.deviceId}:${r.sensorId}`
    if (knownComponents?.has(key) !== true) pairs.set(key, [r.deviceId, r.sensorId])
  }
  if (pairs.size > 0) {
    await tx.query(
      'insert into components (device_id, sensor_id) select * from unnest($1::int[], $2::int[]) on conflict (device_id, sensor_id) do nothing',
      [[...pairs.values()].map((p) => p[0]), [...pairs.values()].map((p) => p[1])])
  }
  // Times travel as epoch milliseconds both ways, and only the keys of the inserted rows come
  // back: the rows themselves are the caller's, so nothing is parsed twice.
  const insertedKeys = await tx.query<InsertedKey>(`
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select d, s, to_timestamp(t / 1000.0), v, r from unnest($1::int[], $2::int[], $3::float8[], $4::float8[], $5::float8[]) as u(d, s, t, v, r)
    on conflict (device_id, sensor_id, recorded_at) do nothing
    returning device_id, sensor_id, (extract(epoch from recorded_at) * 1000)::float8 as at`,
  [sorted.map((r) => r.deviceId), sorted.map((r) => r.sensorId), sorted.map((r) => r.recordedAt.getTime()), sorted.map((r) => r.value), sorted.map((r) => r.rawValue)])
  const keys = new Set(insertedKeys.map((k) => `${k.device_id}:${k.sensor_id}:${Math.round(k.at)}`))
  const inserted = keys.size === sorted.length ? sorted : sorted.filter((r) => keys.has(readingKey(r)))
  if (inserted.length === 0) return { stored: 0, duplicates: rows.length, inserted }

  await engine.afterInsert(tx, inserted)
  await moveLatest(tx, inserted)
  const newest = new Map<number, Date>()
  for (const r of inserted) {
    const known = newest.get(r.deviceId)
    if (known === undefined || r.recordedAt > known) newest.set(r.deviceId, r.recordedAt)
  }
  const devices = [...newest.entries()].sort((a, b) => a[0] - b[0])
  await tx.query(`
    update devices d set last_reading_at = greatest(d.last_reading_at, n.at),
      state = case when d.state = 'archived' then d.state else 'has_published' end
    from unnest($1::int[], $2::timestamptz[]) as n(id, at)
    where d.id = n.id`, [devices.map((d) => d[0]), devices.map((d) => d[1])])
  if (knownComponents !== undefined) for (const key of pairs.keys()) knownComponents.add(key)
  return { stored: inserted.length, duplicates: rows.length - inserted.length, inserted }
}

/**
 * Latest and previous value per device and sensor move forward only when the new reading is newer
 * than the stored latest one: backfilled history never overwrites them. The batch's own second
 * newest reading becomes the previous one when it is newer than the stored latest. The latest
 * time per sensor doubles as the component's last_reading_at.
 */
async function moveLatest (tx: Runner, inserted: ReadingRow[]): Promise<void> {
  const bySensor = new Map<string, { newest: ReadingRow, second: ReadingRow | undefined }>()
  for (const row of inserted) {
    const key = `${row.deviceId}:${row.sensorId}`
    const entry = bySensor.get(key)
    if (entry === undefined) bySensor.set(key, { newest: row, second: undefined })
    else if (row.recordedAt > entry.newest.recordedAt) { entry.second = entry.newest; entry.newest = row } else if (entry.second === undefined || row.recordedAt > entry.second.recordedAt) entry.second = row
  }
  const entries = [...bySensor.values()].sort((a, b) => a.newest.deviceId - b.newest.deviceId || a.newest.sensorId - b.newest.sensorId)
  await tx.query(`
    insert into latest_readings as l (device_id, sensor_id, recorded_at, value, raw_value, prev_recorded_at, prev_value, prev_raw_value)
    select * from unnest($1::int[], $2::int[], $3::timestamptz[], $4::float8[], $5::float8[], $6::timestamptz[], $7::float8[], $8::float8[])
    on conflict (device_id, sensor_id) do update set
      prev_recorded_at = case when excluded.prev_recorded_at > l.recorded_at then excluded.prev_recorded_at else l.recorded_at end,
      prev_value = case when excluded.prev_recorded_at > l.recorded_at then excluded.prev_value else l.value end,
      prev_raw_value = case when excluded.prev_recorded_at > l.recorded_at then excluded.prev_raw_value else l.raw_value end,
      recorded_at = excluded.recorded_at, value = excluded.value, raw_value = excluded.raw_value, added_at = now()
    where excluded.recorded_at > l.recorded_at`,
  [entries.map((e) => e.newest.deviceId), entries.map((e) => e.newest.sensorId), entries.map((e) => e.newest.recordedAt), entries.map((e) => e.newest.value), entries.map((e) => e.newest.rawValue),
    entries.map((e) => e.second?.recordedAt ?? null), entries.map((e) => e.second?.value ?? null), entries.map((e) => e.second?.rawValue ?? null)])
}
