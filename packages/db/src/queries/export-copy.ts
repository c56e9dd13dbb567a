import type { Database } from '../client.js'
import { copyOut, type CopyOut } from '../copy-out.js'

/**
 * COPY statements of the exports. postgres.js streams the bytes (`.readable()`) with
 * backpressure and no row objects are built, so memory stays constant. COPY takes no bind parameters, so every value put
 * into these texts is an integer or an ISO instant checked here, never client text.
 */

function int (value: number): string {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`not an id: ${value}`)
  return String(value)
}

function instant (value: Date): string {
  const iso = value.toISOString()
  if (!/^[\d:.TZ+-]+$/.test(iso)) throw new Error('not an instant')
  return `'${iso}'::timestamptz`
}

/**
 * `YYYY-MM-DDTHH:MM:SSZ` (contract), with milliseconds only when a reading has them (as the history
 * does). One `to_char` a row, in the session's time zone, which copyOut sets to UTC: formatting the
 * time is most of what these statements cost in PostgreSQL.
 */
const TIME = `case when date_trunc('second', recorded_at) = recorded_at
  then to_char(recorded_at, 'YYYY-MM-DD"T"HH24:MI:SS"Z"') else to_char(recorded_at, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') end`

export interface ExportRange { deviceId: number, sensorId: number | null, from: Date | null, until: Date | null }

function rangeWhere (range: ExportRange): string {
  const where = [`device_id = ${int(range.deviceId)}`]
  if (range.sensorId !== null) where.push(`sensor_id = ${int(range.sensorId)}`)
  if (range.from !== null) where.push(`recorded_at >= ${instant(range.from)}`)
  if (range.until !== null) where.push(`recorded_at < ${instant(range.until)}`)
  return where.join(' and ')
}

/**
 * Every reading of a device in a range, one row per value, ordered by sensor then time: the
 * primary key's order (device, sensor, time), and on the native engine an index-only scan, so no
 * sort whatever the size. Binary: CopyRows reads the rows, PostgreSQL only scans.
 */
export function exportCopySql (range: ExportRange): string {
  return `copy (select recorded_at, sensor_id, value from readings where ${rangeWhere(range)} order by sensor_id, recorded_at) to stdout with (format binary)`
}

/**
 * The same rows ordered by time, for the wide CSV, with no sort either: one branch per sensor, each
 * in key order (for one sensor, that is time order), merged by time (Merge Append). Each branch
 * sorts in its own subquery because PostgreSQL keeps the branches of a UNION ALL in FROM apart
 * then; flattened, it cannot see that the key's leading columns are fixed in a branch, and sorts
 * everything (a year of 12 sensors: 3.8 s against 2.1 s, and spilling to disk). Rows of one time
 * follow each other in no particular sensor order, which WideCsvLines does not need.
 */
export function exportByTimeCopySql (range: ExportRange, sensorIds: readonly number[]): string {
  const branches = sensorIds.map((id) => `(select recorded_at, sensor_id, value from readings where ${rangeWhere({ ...range, sensorId: id })} order by recorded_at)`)
  const rows = branches.length === 0 ? 'select recorded_at, sensor_id, value from readings where false' : branches.join(' union all ')
  return `copy (select recorded_at, sensor_id, value from (${rows}) r order by recorded_at) to stdout with (format binary)`
}

/** What an export across devices reads: the (device, sensor) pairs, each with a reading in [from, until). */
export interface DevicesRange { pairs: ReadonlyArray<{ deviceId: number, sensorId: number }>, from: Date, until: Date, windowMs: number }

const intArray = (ids: readonly number[]): string => `'{${ids.map(int).join(',')}}'::int4[]`

/**
 * Every reading of the pairs in [from, until), ordered by time, then device, then sensor: the
 * order a client that lost the connection can resume from (the last time it holds). The range is
 * read a window at a time, each pair's readings of a window an index range scan, the window's rows
 * sorted together (a bounded sort, never the whole range); windows follow each other in the
 * nested loop's order. Rows are (recorded_at, sensor_id, value, device_id): one device's row with
 * the device last, which CopyRows reads as it reads a one-device export.
 */
export function devicesExportCopySql (range: DevicesRange): string {
  const windows = Math.max(1, Math.ceil((range.until.getTime() - range.from.getTime()) / range.windowMs))
  const window = `interval '${int(range.windowMs)} milliseconds'`
  return `copy (
    select r.recorded_at, r.sensor_id, r.value, r.device_id
    from generate_series(0, ${int(windows - 1)}) as w(i)
    cross join lateral (
      select x.recorded_at, p.sensor_id, x.value, p.device_id
      from unnest(${intArray(range.pairs.map((p) => p.deviceId))}, ${intArray(range.pairs.map((p) => p.sensorId))}) as p(device_id, sensor_id)
      cross join lateral (
        select recorded_at, value from readings
        where device_id = p.device_id and sensor_id = p.sensor_id
          and recorded_at >= greatest(${instant(range.from)}, ${instant(range.from)} + w.i * ${window})
          and recorded_at < least(${instant(range.until)}, ${instant(range.from)} + (w.i + 1) * ${window})
      ) as x
      order by x.recorded_at, p.device_id, p.sensor_id
    ) as r
  ) to stdout with (format binary)`
}

/**
 * The CSV archive's rows: one per distinct time, ascending, one column per sensor in the given
 * order, empty where a sensor has no value then (behaviour.md §11). Grouping happens in
 * PostgreSQL, which spills to disk beyond work_mem, so the exporter's memory does not grow either.
 */
export function archiveCopySql (deviceId: number, sensorIds: number[]): string {
  const columns = sensorIds.map((id) => `max(value) filter (where sensor_id = ${int(id)})`)
  return `copy (select ${TIME} as recorded_at${columns.map((c) => `, ${c}`).join('')}
    from readings where device_id = ${int(deviceId)} group by recorded_at order by recorded_at) to stdout with (format csv)`
}

/*
 * The COPYs opened: each on a connection of its own to the database's url (copyOut says why).
 */

/** A device's readings in a range as binary COPY rows (CopyRows), by sensor then time. */
export async function copyDeviceReadings (database: Pick<Database, 'url'>, range: ExportRange): Promise<CopyOut> {
  return await copyOut(database.url, exportCopySql(range), { applicationName: 'esp-export' })
}

/** A device's readings of these sensors in a range as binary COPY rows (CopyRows), by time (the wide CSV). */
export async function copyDeviceReadingsByTime (database: Pick<Database, 'url'>, range: ExportRange, sensorIds: readonly number[]): Promise<CopyOut> {
  return await copyOut(database.url, exportByTimeCopySql(range, sensorIds), { applicationName: 'esp-export' })
}

/** rows a window of the export across devices aims at (at one reading a minute a pair), and the sort memory they take */
const WINDOW_ROWS = 500_000
const WINDOW_WORK_MEM = '64MB'
const MINUTE_MS = 60_000

/**
 * The readings of the pairs (exportPairs), each between its first and last reading, as binary COPY
 * rows with the device (CopyRows), by time, then device, then sensor (devicesExportCopySql).
 */
export async function copyDevicesReadings (database: Pick<Database, 'url'>, pairs: ReadonlyArray<{ deviceId: number, sensorId: number, first: Date, last: Date }>): Promise<CopyOut> {
  const first = pairs.reduce((min, p) => Math.min(min, p.first.getTime()), Infinity)
  const last = pairs.reduce((max, p) => Math.max(max, p.last.getTime()), -Infinity)
  const windowMs = Math.min(7 * 24 * 60, Math.max(60, Math.floor(WINDOW_ROWS / Math.max(1, pairs.length)))) * MINUTE_MS
  const range = pairs.length === 0 ? { pairs, from: new Date(0), until: new Date(0), windowMs } : { pairs, from: new Date(first), until: new Date(last + 1), windowMs }
  return await copyOut(database.url, devicesExportCopySql(range), { applicationName: 'esp-export', workMem: WINDOW_WORK_MEM })
}

/** A device's CSV archive rows (archiveCopySql) as CSV text, without the header. */
export async function copyArchiveCsv (database: Pick<Database, 'url'>, deviceId: number, sensorIds: number[]): Promise<CopyOut> {
  return await copyOut(database.url, archiveCopySql(deviceId, sensorIds), { applicationName: 'esp-csv-archive' })
}
