/**
 * COPY statements of the exports. PostgreSQL formats every line itself and postgres.js streams
 * the bytes (`.readable()`) with backpressure: no row objects are built in Node, so memory stays
 * constant and the throughput is the server's. COPY takes no bind parameters, so every value put
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

/** `YYYY-MM-DDTHH:MM:SSZ` (contract), with milliseconds only when a reading has them (as the history does). */
const TIME = `to_char(recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') ||
  case when date_trunc('second', recorded_at) = recorded_at then 'Z' else to_char(recorded_at at time zone 'UTC', '.MS"Z"') end`

export type ExportFormat = 'csv' | 'ndjson'

export interface ExportRange { deviceId: number, sensorId: number | null, from: Date | null, until: Date | null }

/**
 * Every reading of a device in a range, one line per value, ordered by sensor then time: the
 * primary key's order (device, sensor, time), so no sort whatever the size.
 */
export function exportCopySql (format: ExportFormat, range: ExportRange): string {
  const where = [`device_id = ${int(range.deviceId)}`]
  if (range.sensorId !== null) where.push(`sensor_id = ${int(range.sensorId)}`)
  if (range.from !== null) where.push(`recorded_at >= ${instant(range.from)}`)
  if (range.until !== null) where.push(`recorded_at < ${instant(range.until)}`)
  const from = `from readings where ${where.join(' and ')} order by sensor_id, recorded_at`
  if (format === 'csv') {
    return `copy (select ${TIME} as recorded_at, sensor_id, value ${from}) to stdout with (format csv, header true)`
  }
  // Text format escapes only backslashes and control characters, which these lines never hold;
  // float8 text is the shortest exact form (1e-05, 21.5), valid JSON numbers.
  return `copy (select '{"recorded_at":"' || ${TIME} || '","sensor_id":' || sensor_id || ',"value":' || coalesce(value::text, 'null') || '}' ${from}) to stdout`
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

/** A CSV cell: quoted only when it must be (RFC 4180), so plain headers stay as the platform wrote them. */
export function csvCell (text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}
