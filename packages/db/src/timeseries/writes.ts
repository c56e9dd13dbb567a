import { COPY_BINARY_HEADER, PG_EPOCH_MS, TWO_32 } from '../copy-binary.js'
import { compareReadings, type ReadingRow, type Runner, runPipeline, type Statement, type TimeSeriesEngine } from './engine.js'
import { trimOldest } from '../bounded.js'

export interface WriteResult {
  stored: number
  duplicates: number
  /** the rows actually inserted, for whatever runs after the commit (live MQTT, forwarding) */
  inserted: ReadingRow[]
}

interface InsertedKey { device_id: number, sensor_id: number, at: number }

const readingKey = (r: Pick<ReadingRow, 'deviceId' | 'sensorId' | 'recordedAt'>): string => `${r.deviceId}:${r.sensorId}:${r.recordedAt.getTime()}`

/**
 * Statements a caller wraps around the write: `before` go with its first round trip, `after` with
 * its last. The writer opens and commits its transaction this way, so they cost no round trip of
 * their own.
 */
export interface WriteFrame { before: readonly Statement[], after: readonly Statement[] }

const NO_FRAME: WriteFrame = { before: [], after: [] }

/**
 * The one write path for readings (HTTP, MQTT, CSV import), of one or many devices, in the
 * caller's transaction (or one `frame` opens and closes), in three round trips whatever the batch
 * size: the COPY's start, behind the components not yet known; its rows; then the tiers, latest
 * values and devices, all sent at once, since none needs another's answer. Raw rows are
 * idempotent (first write wins). Rows are sorted here so that concurrent transactions take row
 * locks in the same order and cannot deadlock, and so that every later step walks runs of one
 * device and sensor instead of keying a map by row. Where `rows` repeat a (device, sensor,
 * recorded_at), the first in `rows` is written (the sort is stable) and the others count as
 * duplicates.
 */
export async function writeReadings (tx: Runner, engine: TimeSeriesEngine, rows: ReadingRow[], knownComponents?: KnownComponents, frame: WriteFrame = NO_FRAME): Promise<WriteResult> {
  const sorted = [...rows].sort(compareReadings)
    .filter((r, i, all) => !sameReading(r, all[i - 1]))
  // Pairs the caller ensured are skipped; the others are inserted here but not remembered, since
  // this transaction may yet roll back.
  const components = componentsStatement(sorted, knownComponents)
  const { inserted, after } = sorted.length === 0
    ? { inserted: [], after: [] }
    : await insertRaw(tx, sorted, [...frame.before, ...(components === null ? [] : [components])])
  const rest = inserted.length === 0 ? [] : [...engine.afterInsert(inserted), latestStatement(inserted), devicesStatement(inserted)]
  await runPipeline(tx, [...(sorted.length === 0 ? frame.before : []), ...after, ...rest, ...frame.after])
  return { stored: inserted.length, duplicates: rows.length - inserted.length, inserted }
}

/** last_reading_at and state of each device: its newest time is the newest of its sensors' runs. */
function devicesStatement (inserted: readonly ReadingRow[]): Statement {
  const devices: number[] = []
  const newest: Date[] = []
  for (let i = 0; i < inserted.length; i++) {
    const r = inserted[i] as ReadingRow
    if (sameSensor(r, inserted[i + 1])) continue
    if (devices.at(-1) !== r.deviceId) { devices.push(r.deviceId); newest.push(r.recordedAt) } else if (r.recordedAt > (newest.at(-1) as Date)) newest[newest.length - 1] = r.recordedAt
  }
  return {
    text: `
    update devices d set last_reading_at = greatest(d.last_reading_at, n.at),
      state = case when d.state = 'archived' then d.state else 'has_published' end
    from unnest($1::int[], $2::timestamptz[]) as n(id, at)
    where d.id = n.id`,
    params: [devices, newest]
  }
}

/**
 * (device, sensor) pairs known to have a component, so that writes skip inserting them. Bounded:
 * past `maxDevices` devices the least recently written one is forgotten (a fleet larger than the
 * cap, or devices long deleted, would otherwise grow it without end, about 0.4 KB a device); a
 * forgotten pair costs one `on conflict do nothing` insert the next time, nothing else.
 */
export class KnownComponents {
  private readonly sensorsOf = new Map<number, Set<number>>()
  /** the device used last, already at the end of the order: a batch asks about one device many times */
  private latest: number | undefined

  constructor (private readonly maxDevices = 10_000) {}

  /** devices remembered */
  get devices (): number { return this.sensorsOf.size }

  has (deviceId: number, sensorId: number): boolean {
    const sensors = this.sensorsOf.get(deviceId)
    if (sensors === undefined) return false
    // Moved to the end: the Map's order is the order of use, so the first key is the one to forget.
    if (deviceId !== this.latest) {
      this.sensorsOf.delete(deviceId)
      this.sensorsOf.set(deviceId, sensors)
      this.latest = deviceId
    }
    return sensors.has(sensorId)
  }

  add (deviceId: number, sensorId: number): void {
    const sensors = this.sensorsOf.get(deviceId)
    if (sensors !== undefined) { sensors.add(sensorId); return }
    this.sensorsOf.set(deviceId, new Set([sensorId]))
    this.latest = deviceId
    trimOldest(this.sensorsOf, this.maxDevices)
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
  const statement = componentsStatement(rows, known)
  if (statement === null) return
  await runner.query(statement.text, statement.params)
  // Remembered once committed: this insert commits on its own.
  const [devices, sensors] = statement.params as [number[], number[]]
  devices.forEach((deviceId, i) => known?.add(deviceId, sensors[i] as number))
}

/** The insert of the (device, sensor) pairs `known` lacks, sorted; null when there are none. */
function componentsStatement (rows: readonly ReadingRow[], known: KnownComponents | undefined): Statement | null {
  // Only this statement's pairs, all of them: no cap.
  const fresh = new KnownComponents(Number.POSITIVE_INFINITY)
  const pairs: [number, number][] = []
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i] as ReadingRow
    // Rows of one sensor usually follow each other (always once sorted): one lookup a run.
    if (sameSensor(r, rows[i - 1]) || known?.has(r.deviceId, r.sensorId) === true || fresh.has(r.deviceId, r.sensorId)) continue
    fresh.add(r.deviceId, r.sensorId)
    pairs.push([r.deviceId, r.sensorId])
  }
  if (pairs.length === 0) return null
  // Sorted, so that concurrent inserts take the index entries in one order.
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  return {
    text: 'insert into components (device_id, sensor_id) select * from unnest($1::int[], $2::int[]) on conflict (device_id, sensor_id) do nothing',
    params: [pairs.map((p) => p[0]), pairs.map((p) => p[1])]
  }
}

/** Whether `b` is a reading of the same device and sensor as `a` (a neighbour in a run). */
const sameSensor = (a: ReadingRow, b: ReadingRow | undefined): boolean =>
  b !== undefined && a.deviceId === b.deviceId && a.sensorId === b.sensorId

const sameReading = (a: ReadingRow, b: ReadingRow | undefined): boolean => sameSensor(a, b) && a.recordedAt.getTime() === b?.recordedAt.getTime()

export const READINGS_COPY_TARGET = 'readings (device_id, sensor_id, recorded_at, value, raw_value)'

const SAVEPOINT = 'esp_readings_copy'

/**
 * The raw rows, first write wins: those actually inserted, still sorted, and what must follow in
 * the transaction's next round trip. `before` go with the first round trip. Where the driver can,
 * the rows go in as a binary COPY in a savepoint: nothing to parse on either side, no conflict
 * arbitration and no RETURNING, at the speed of a bare COPY. A COPY cannot skip a stored (device,
 * sensor, time), so any error rolls the savepoint back and the rows go in again by `ON CONFLICT
 * DO NOTHING RETURNING`, which also names the ones that were new. Devices resend after a lost
 * acknowledgement, so that path is common enough to be exact, rare enough to be dearer.
 */
async function insertRaw (tx: Runner, sorted: ReadingRow[], before: Statement[]): Promise<{ inserted: ReadingRow[], after: Statement[] }> {
  const release: Statement[] = [{ text: `release savepoint ${SAVEPOINT}` }]
  let fallback = before
  let copyError: unknown = null
  if (tx.copyBinary !== undefined) {
    try {
      await tx.copyBinary(READINGS_COPY_TARGET, binaryReadings(sorted), [...before, { text: `savepoint ${SAVEPOINT}` }])
      return { inserted: sorted, after: release }
    } catch (err) {
      // Whatever failed (the COPY, or a statement before it) fails again below with its own error.
      copyError = err
      fallback = [{ text: `rollback to savepoint ${SAVEPOINT}` }]
    }
  }
  // Times travel as epoch milliseconds both ways, and only the keys of the inserted rows come
  // back: the rows themselves are the caller's, so nothing is parsed twice.
  const results = await runPipeline(tx, [...fallback, {
    text: `
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select d, s, to_timestamp(t / 1000.0), v, r from unnest($1::int[], $2::int[], $3::float8[], $4::float8[], $5::float8[]) as u(d, s, t, v, r)
    on conflict (device_id, sensor_id, recorded_at) do nothing
    returning device_id, sensor_id, (extract(epoch from recorded_at) * 1000)::float8 as at`,
    params: [sorted.map((r) => r.deviceId), sorted.map((r) => r.sensorId), sorted.map((r) => r.recordedAt.getTime()), sorted.map((r) => r.value), sorted.map((r) => r.rawValue)]
  }]).catch((err: unknown) => {
    // A statement before the savepoint failed, so there is no savepoint to return to (3B001) and
    // the transaction is aborted (25P02): that statement's own error says why.
    const code = (err as { code?: unknown }).code
    throw (code === '3B001' || code === '25P02') && copyError !== null ? copyError : err
  })
  const insertedKeys = results.at(-1) as InsertedKey[]
  const after = tx.copyBinary === undefined ? [] : release
  if (insertedKeys.length === sorted.length) return { inserted: sorted, after }
  const keys = new Set(insertedKeys.map((k) => `${k.device_id}:${k.sensor_id}:${Math.round(k.at)}`))
  return { inserted: sorted.filter((r) => keys.has(readingKey(r))), after }
}

const ROW_BYTES = 2 + (4 + 4) * 2 + (4 + 8) * 3

/**
 * Rows in COPY's binary format for READINGS_COPY_TARGET: the header, per row a field count and
 * each field as its length and network-order bytes, a -1 trailer. Timestamps are int64
 * microseconds since 2000, exact in two halves: the microseconds of any time the platform takes
 * stay below 2^53. Exported for the ingest benchmark's bare baseline, which copies as this does.
 */
export function binaryReadings (rows: readonly ReadingRow[]): Buffer {
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
 * Whether the batch's oldest reading (carried as minus its epoch ms) is before the hour of the
 * stored latest one: float8 and timestamp arithmetic only (extract() is numeric, slow per row), and
 * date_bin is the same hour in every session time zone.
 */
const BACKFILLS = "to_timestamp(-excluded.history_revision::float8 / 1000) < date_bin('1 hour', l.recorded_at, timestamptz '2000-01-01 00:00:00+00')"

/**
 * Latest and previous value per device and sensor move forward only when the new reading is newer
 * than the stored latest one: backfilled history never overwrites them. The batch's own second
 * newest reading becomes the previous one when it is newer than the stored latest. The latest
 * time per sensor doubles as the component's last_reading_at.
 */
function latestStatement (inserted: readonly ReadingRow[]): Statement {
  // `inserted` is sorted: each (device, sensor) run ends with its newest reading, and the one
  // before it in the run is the batch's second newest; it starts with its oldest.
  const entries: { newest: ReadingRow, second: ReadingRow | undefined, oldest: ReadingRow }[] = []
  let oldest = inserted[0] as ReadingRow
  for (let i = 0; i < inserted.length; i++) {
    const row = inserted[i] as ReadingRow
    if (!sameSensor(row, inserted[i - 1])) oldest = row
    if (sameSensor(row, inserted[i + 1])) continue
    const previous = inserted[i - 1]
    entries.push({ newest: row, second: sameSensor(row, previous) ? previous : undefined, oldest })
  }
  // history_revision takes a new revision when the batch holds a reading older than the hour of
  // the stored latest one (a backfill into closed hours). Its oldest time travels in the inserted
  // row's history_revision, as minus its epoch milliseconds: ON CONFLICT sees only the columns
  // of the row, and a new row's revision need only differ from any kept one (there is none).
  return {
    text: `
    insert into latest_readings as l (device_id, sensor_id, recorded_at, value, raw_value, prev_recorded_at, prev_value, prev_raw_value, history_revision)
    select * from unnest($1::int[], $2::int[], $3::timestamptz[], $4::float8[], $5::float8[], $6::timestamptz[], $7::float8[], $8::float8[], $9::int8[])
    on conflict (device_id, sensor_id) do update set
      prev_recorded_at = case when excluded.recorded_at <= l.recorded_at then l.prev_recorded_at when excluded.prev_recorded_at > l.recorded_at then excluded.prev_recorded_at else l.recorded_at end,
      prev_value = case when excluded.recorded_at <= l.recorded_at then l.prev_value when excluded.prev_recorded_at > l.recorded_at then excluded.prev_value else l.value end,
      prev_raw_value = case when excluded.recorded_at <= l.recorded_at then l.prev_raw_value when excluded.prev_recorded_at > l.recorded_at then excluded.prev_raw_value else l.raw_value end,
      recorded_at = greatest(excluded.recorded_at, l.recorded_at),
      value = case when excluded.recorded_at > l.recorded_at then excluded.value else l.value end,
      raw_value = case when excluded.recorded_at > l.recorded_at then excluded.raw_value else l.raw_value end,
      added_at = case when excluded.recorded_at > l.recorded_at then now() else l.added_at end,
      history_revision = case when ${BACKFILLS} then nextval('representation_revision') else l.history_revision end
    where excluded.recorded_at > l.recorded_at or ${BACKFILLS}`,
    params: [entries.map((e) => e.newest.deviceId), entries.map((e) => e.newest.sensorId), entries.map((e) => e.newest.recordedAt), entries.map((e) => e.newest.value), entries.map((e) => e.newest.rawValue),
      entries.map((e) => e.second?.recordedAt ?? null), entries.map((e) => e.second?.value ?? null), entries.map((e) => e.second?.rawValue ?? null),
      entries.map((e) => -e.oldest.recordedAt.getTime())]
  }
}
