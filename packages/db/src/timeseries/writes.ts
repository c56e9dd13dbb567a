import { COPY_BINARY_HEADER, PG_EPOCH_MS, TWO_32 } from '../copy-binary.js'
import { compareReadings, type ReadingRow, type Runner, type TimeSeriesEngine } from './engine.js'

export interface WriteResult {
  stored: number
  duplicates: number
  /** the rows actually inserted, for whatever runs after the commit (live MQTT, forwarding) */
  inserted: ReadingRow[]
}

interface InsertedKey { device_id: number, sensor_id: number, at: number }

const readingKey = (r: Pick<ReadingRow, 'deviceId' | 'sensorId' | 'recordedAt'>): string => `${r.deviceId}:${r.sensorId}:${r.recordedAt.getTime()}`

/**
 * The one write path for readings (HTTP, MQTT, CSV import), of one or many devices, in the
 * caller's transaction, in a fixed number of statements whatever the batch size: components
 * (unless known to exist), raw rows (idempotent: first write wins), tiers, latest values, devices.
 * Rows are sorted here so that concurrent transactions take row locks in the same order and cannot
 * deadlock, and so that every later step walks runs of one device and sensor instead of keying a
 * map by row. Where `rows` repeat a (device, sensor, recorded_at), the first in `rows` is written
 * (the sort is stable) and the others count as duplicates.
 */
export async function writeReadings (tx: Runner, engine: TimeSeriesEngine, rows: ReadingRow[], knownComponents?: KnownComponents): Promise<WriteResult> {
  if (rows.length === 0) return { stored: 0, duplicates: 0, inserted: [] }
  const sorted = [...rows].sort(compareReadings)
    .filter((r, i, all) => !sameReading(r, all[i - 1]))
  // Pairs the caller ensured are skipped; the others are inserted here but not remembered, since
  // this transaction may yet roll back.
  await insertComponents(tx, sorted, knownComponents, false)
  const inserted = await insertRaw(tx, sorted)
  if (inserted.length === 0) return { stored: 0, duplicates: rows.length, inserted }

  await engine.afterInsert(tx, inserted)
  await moveLatest(tx, inserted)
  // The newest time per device is the newest of its sensors' runs.
  const devices: number[] = []
  const newest: Date[] = []
  for (let i = 0; i < inserted.length; i++) {
    const r = inserted[i] as ReadingRow
    if (sameSensor(r, inserted[i + 1])) continue
    if (devices.at(-1) !== r.deviceId) { devices.push(r.deviceId); newest.push(r.recordedAt) } else if (r.recordedAt > (newest.at(-1) as Date)) newest[newest.length - 1] = r.recordedAt
  }
  await tx.query(`
    update devices d set last_reading_at = greatest(d.last_reading_at, n.at),
      state = case when d.state = 'archived' then d.state else 'has_published' end
    from unnest($1::int[], $2::timestamptz[]) as n(id, at)
    where d.id = n.id`, [devices, newest])
  return { stored: inserted.length, duplicates: rows.length - inserted.length, inserted }
}

/** (device, sensor) pairs known to have a component row, so that writes skip inserting them. */
export class KnownComponents {
  private readonly sensorsOf = new Map<number, Set<number>>()

  has (deviceId: number, sensorId: number): boolean {
    return this.sensorsOf.get(deviceId)?.has(sensorId) === true
  }

  add (deviceId: number, sensorId: number): void {
    const sensors = this.sensorsOf.get(deviceId)
    if (sensors === undefined) this.sensorsOf.set(deviceId, new Set([sensorId]))
    else sensors.add(sensorId)
  }
}

/**
 * A component row for every (device, sensor) of `rows` that `known` does not list yet. A component
 * is a fact about the device (a kit's sensors are components before any reading), true whether or
 * not the readings that revealed it commit. The writer runs this on its own before the write
 * transaction: inside it, a new pair held its index entry until commit, and concurrent writes of
 * the same new kit waited for each other's whole transaction.
 */
export async function ensureComponents (runner: Runner, rows: readonly ReadingRow[], known?: KnownComponents): Promise<void> {
  await insertComponents(runner, rows, known, true)
}

/** Inserts the pairs `known` lacks; `remember` them only where the insert commits on its own. */
async function insertComponents (runner: Runner, rows: readonly ReadingRow[], known: KnownComponents | undefined, remember: boolean): Promise<void> {
  const fresh = new KnownComponents()
  const pairs: [number, number][] = []
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as ReadingRow
    // Rows of one sensor usually follow each other (always once sorted): one lookup a run.
    if (sameSensor(r, rows[i - 1]) || known?.has(r.deviceId, r.sensorId) === true || fresh.has(r.deviceId, r.sensorId)) continue
    fresh.add(r.deviceId, r.sensorId)
    pairs.push([r.deviceId, r.sensorId])
  }
  if (pairs.length === 0) return
  // Sorted, so that concurrent inserts take the index entries in one order.
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  await runner.query(
    'insert into components (device_id, sensor_id) select * from unnest($1::int[], $2::int[]) on conflict (device_id, sensor_id) do nothing',
    [pairs.map((p) => p[0]), pairs.map((p) => p[1])])
  if (remember && known !== undefined) for (const [deviceId, sensorId] of pairs) known.add(deviceId, sensorId)
}

/** Whether `b` is a reading of the same device and sensor as `a` (a neighbour in a run). */
const sameSensor = (a: ReadingRow, b: ReadingRow | undefined): boolean =>
  b !== undefined && a.deviceId === b.deviceId && a.sensorId === b.sensorId

const sameReading = (a: ReadingRow, b: ReadingRow | undefined): boolean => sameSensor(a, b) && a.recordedAt.getTime() === b?.recordedAt.getTime()

const READINGS_COPY_TARGET = 'readings (device_id, sensor_id, recorded_at, value, raw_value)'

/**
 * The raw rows, first write wins; returns those actually inserted, still sorted. Where the driver
 * can, the rows go in as a binary COPY in a savepoint: nothing to parse on either side, no
 * conflict arbitration and no RETURNING, at the speed of a bare COPY. A COPY cannot skip a
 * stored (device, sensor, time), so any error rolls the savepoint back and the rows go in again
 * by `ON CONFLICT DO NOTHING RETURNING`, which also names the ones that were new. Devices resend
 * after a lost acknowledgement, so that path is common enough to be exact, rare enough to be dearer.
 */
async function insertRaw (tx: Runner, sorted: ReadingRow[]): Promise<ReadingRow[]> {
  if (tx.copyBinary !== undefined) {
    await tx.query('savepoint esp_readings_copy')
    try {
      await tx.copyBinary(READINGS_COPY_TARGET, binaryReadings(sorted))
      await tx.query('release savepoint esp_readings_copy')
      return sorted
    } catch {
      await tx.query('rollback to savepoint esp_readings_copy')
    }
  }
  // Times travel as epoch milliseconds both ways, and only the keys of the inserted rows come
  // back: the rows themselves are the caller's, so nothing is parsed twice.
  const insertedKeys = await tx.query<InsertedKey>(`
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select d, s, to_timestamp(t / 1000.0), v, r from unnest($1::int[], $2::int[], $3::float8[], $4::float8[], $5::float8[]) as u(d, s, t, v, r)
    on conflict (device_id, sensor_id, recorded_at) do nothing
    returning device_id, sensor_id, (extract(epoch from recorded_at) * 1000)::float8 as at`,
  [sorted.map((r) => r.deviceId), sorted.map((r) => r.sensorId), sorted.map((r) => r.recordedAt.getTime()), sorted.map((r) => r.value), sorted.map((r) => r.rawValue)])
  if (insertedKeys.length === sorted.length) return sorted
  const keys = new Set(insertedKeys.map((k) => `${k.device_id}:${k.sensor_id}:${Math.round(k.at)}`))
  return sorted.filter((r) => keys.has(readingKey(r)))
}

const ROW_BYTES = 2 + (4 + 4) * 2 + (4 + 8) * 3

/**
 * Rows in COPY's binary format: the header, per row a field count and each field as its length
 * and network-order bytes, a -1 trailer. Timestamps are int64 microseconds since 2000, exact in
 * two halves: the microseconds of any time the platform takes stay below 2^53.
 */
function binaryReadings (rows: readonly ReadingRow[]): Buffer {
  const buffer = Buffer.allocUnsafe(COPY_BINARY_HEADER.length + rows.length * ROW_BYTES + 2)
  COPY_BINARY_HEADER.copy(buffer, 0)
  const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.byteLength)
  let o = COPY_BINARY_HEADER.length
  for (const r of rows) {
    const us = (r.recordedAt.getTime() - PG_EPOCH_MS) * 1000
    const high = Math.floor(us / TWO_32)
    view.setInt16(o, 5); o += 2
    view.setInt32(o, 4); view.setInt32(o + 4, r.deviceId); o += 8
    view.setInt32(o, 4); view.setInt32(o + 4, r.sensorId); o += 8
    view.setInt32(o, 8); view.setInt32(o + 4, high); view.setUint32(o + 8, us - high * TWO_32); o += 12
    view.setInt32(o, 8); view.setFloat64(o + 4, r.value); o += 12
    view.setInt32(o, 8); view.setFloat64(o + 4, r.rawValue); o += 12
  }
  view.setInt16(o, -1)
  return buffer
}

/**
 * Latest and previous value per device and sensor move forward only when the new reading is newer
 * than the stored latest one: backfilled history never overwrites them. The batch's own second
 * newest reading becomes the previous one when it is newer than the stored latest. The latest
 * time per sensor doubles as the component's last_reading_at.
 */
async function moveLatest (tx: Runner, inserted: ReadingRow[]): Promise<void> {
  // `inserted` is sorted: each (device, sensor) run ends with its newest reading, and the one
  // before it in the run is the batch's second newest.
  const entries: { newest: ReadingRow, second: ReadingRow | undefined }[] = []
  for (let i = 0; i < inserted.length; i++) {
    const row = inserted[i] as ReadingRow
    if (sameSensor(row, inserted[i + 1])) continue
    const previous = inserted[i - 1]
    entries.push({ newest: row, second: sameSensor(row, previous) ? previous : undefined })
  }
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
