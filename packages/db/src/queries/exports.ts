import type { Handle, Sql } from '../client.js'
import type { UserRole } from '../schema/index.js'
import { pgDateOrNull } from '../timeseries/engine.js'
import { visibleSql, type Visibility } from './visibility.js'

export * from './export-copy.js'

/*
 * The statements of the exports, the CSV archive and the export links, besides their COPYs
 * (export-copy.ts).
 */

/** Whether a sensor of this id exists (an export naming another is a 404). */
export async function exportSensorExists (h: Handle, sensorId: number): Promise<boolean> {
  const [known] = await h.sql<{ id: number }[]>`select id from sensors where id = ${sensorId}`
  return known !== undefined
}

interface Bbox { west: number, south: number, east: number, north: number }

/** Which devices an export across devices (or an area's statistics) reads; every part given narrows it. */
export interface ExportSelection { ids: number[] | null, tags: string[] | null, bbox: Bbox | null, exposure?: 'indoor' | 'outdoor' | null }

/** A device's sensor with readings in the range, and its first and last time there. */
export interface SelectedPair { deviceId: number, sensorId: number, first: Date, last: Date }

/** Of these device ids, those of active devices the viewer may see. */
export async function visibleActiveDeviceIds (h: Handle, ids: number[], v: Visibility): Promise<number[]> {
  const sql = h.sql
  const found = await sql<{ id: number }[]>`select d.id from devices d where d.id = any(${ids}::int4[]) and d.archived_at is null and ${visibleSql(sql, 'd', v)}`
  return found.map((row) => row.id)
}

/**
 * The condition on `d` (devices) of a selection across devices: active, visible to the viewer, and
 * every selector given. The one home of what device_ids, with_tags, bbox and exposure mean.
 */
export function selectedDevicesSql (h: Handle, selection: ExportSelection, v: Visibility): ReturnType<Sql> {
  const sql = h.sql
  const { bbox } = selection
  const exposure = selection.exposure ?? null
  return sql`d.archived_at is null and ${visibleSql(sql, 'd', v)}
      ${selection.ids === null ? sql`` : sql`and d.id = any(${selection.ids}::int4[])`}
      ${selection.tags === null ? sql`` : sql`and exists (select from device_tags dt join tags t on t.id = dt.tag_id where dt.device_id = d.id and t.name = any(${selection.tags}::text[]))`}
      ${bbox === null
        ? sql``
        : sql`and d.latitude between ${bbox.south} and ${bbox.north} and ${bbox.west <= bbox.east
          ? sql`d.longitude between ${bbox.west} and ${bbox.east}`
          : sql`(d.longitude >= ${bbox.west} or d.longitude <= ${bbox.east})`}`}
      ${exposure === null ? sql`` : sql`and coalesce(d.exposure, 'outdoor') = ${exposure}`}`
}

/**
 * The (device, sensor) pairs of the selection with a reading in [from, until), with the first and
 * last reading of each there (two probes of the readings key a pair), in device then sensor order.
 * Only active devices the viewer may see.
 */
export async function exportPairs (h: Handle, v: Visibility, selection: ExportSelection, range: { sensorId: number | null, from: Date | null, until: Date | null }): Promise<SelectedPair[]> {
  const sql = h.sql
  const from = range.from?.toISOString() ?? '-infinity'
  const until = range.until?.toISOString() ?? 'infinity'
  const rows = await sql<{ device_id: number, sensor_id: number, first: unknown, last: unknown }[]>`
    select c.device_id, c.sensor_id,
      (select min(r.recorded_at) from readings r where r.device_id = c.device_id and r.sensor_id = c.sensor_id and r.recorded_at >= ${from}::timestamptz and r.recorded_at < ${until}::timestamptz) as first,
      (select max(r.recorded_at) from readings r where r.device_id = c.device_id and r.sensor_id = c.sensor_id and r.recorded_at >= ${from}::timestamptz and r.recorded_at < ${until}::timestamptz) as last
    from devices d join components c on c.device_id = d.id
    where ${selectedDevicesSql(h, selection, v)}
      ${range.sensorId === null ? sql`` : sql`and c.sensor_id = ${range.sensorId}`}
    order by c.device_id, c.sensor_id`
  return rows.flatMap((row) => {
    const first = pgDateOrNull(row.first)
    const last = pgDateOrNull(row.last)
    return first === null || last === null ? [] : [{ deviceId: row.device_id, sensorId: row.sensor_id, first, last }]
  })
}

/**
 * The ids of the device's sensors (its components, which the write path adds for every sensor it
 * stores) with a reading in the range, in sensor id order. One probe of the readings key per sensor.
 */
export async function sensorIdsWithReadings (h: Handle, range: { deviceId: number, sensorId: number | null, from: Date | null, until: Date | null }): Promise<number[]> {
  const from = range.from?.toISOString() ?? '-infinity'
  const until = range.until?.toISOString() ?? 'infinity'
  const [found] = await h.sql<{ ids: number[] }[]>`
    select coalesce(array_agg(c.sensor_id), '{}') as ids
    from components c
    where c.device_id = ${range.deviceId} and (${range.sensorId}::int is null or c.sensor_id = ${range.sensorId})
      and exists (select from readings r where r.device_id = c.device_id and r.sensor_id = c.sensor_id
        and r.recorded_at >= ${from}::timestamptz and r.recorded_at < ${until}::timestamptz)`
  return found?.ids ?? []
}

/** A sensor as a column of an export: its name, unit and measurement's name. */
export interface SensorColumnRow { id: number, name: string, unit: string | null, measurement: string | null }

/** These sensors as export columns, in id order. */
export async function exportSensorColumns (h: Handle, ids: number[]): Promise<SensorColumnRow[]> {
  return await h.sql<SensorColumnRow[]>`
    select s.id, s.name, s.unit, m.name as measurement
    from sensors s left join measurements m on m.id = s.measurement_id
    where s.id = any(${ids}::int4[])
    order by s.id`
}

/** A device's sensors (its components) as export columns, in sensor id order. */
export async function deviceSensorColumns (h: Handle, deviceId: number): Promise<SensorColumnRow[]> {
  return await h.sql<SensorColumnRow[]>`
    select s.id, s.name, s.unit, m.name as measurement
    from components c join sensors s on s.id = c.sensor_id left join measurements m on m.id = s.measurement_id
    where c.device_id = ${deviceId} order by s.id`
}

/**
 * Stamps a CSV archive request on an active device unless one was stamped after `notBefore`;
 * false when it was (or the device is archived). A conditional UPDATE: of two concurrent requests
 * the second waits on the row lock and re-reads the committed time.
 */
export async function stampCsvArchiveRequest (h: Handle, deviceId: number, now: Date, notBefore: Date): Promise<boolean> {
  const [row] = await h.sql<{ id: number }[]>`
    update devices set csv_archive_requested_at = ${now.toISOString()}::timestamptz
    where id = ${deviceId} and archived_at is null
      and (csv_archive_requested_at is null or csv_archive_requested_at <= ${notBefore.toISOString()}::timestamptz)
    returning id`
  return row !== undefined
}

/** Who a CSV archive goes to: the active device and the user who asked; null when either is gone. */
export interface CsvArchiveTarget { id: number, name: string, email: string, username: string }

export async function csvArchiveTarget (h: Handle, deviceId: number, userId: number): Promise<CsvArchiveTarget | null> {
  const [target] = await h.sql<CsvArchiveTarget[]>`
    select d.id, d.name, u.email, u.username from devices d join users u on u.id = ${userId}
    where d.id = ${deviceId} and d.archived_at is null`
  return target ?? null
}

/** An active user as an export link names them; null when there is none (or archived). */
export async function exportLinkUser (h: Handle, userId: number): Promise<{ id: number, username: string, role: UserRole } | null> {
  const [user] = await h.sql<Array<{ id: number, username: string, role: UserRole }>>`select id, username, role from users where id = ${userId} and archived_at is null`
  return user ?? null
}
