import type { Handle } from '../client.js'
import { pgDateOrNull } from '../timeseries/engine.js'
import { type ExportSelection, selectedDevicesSql } from './exports.js'
import type { Visibility } from './visibility.js'

/*
 * The devices an area's statistics or grid reads: the selection of the exports across devices,
 * each device with the one sensor that stands for the measurement asked.
 */

/** What is measured: a measurement (any sensor of it), a sensor, or a sensor key as kits name them. */
export type MeasuredBy = { measurementId: number } | { sensorId: number } | { sensorKey: string }

/**
 * A selected device, the sensor read for it, and where it is; the sensor's newest reading and the
 * revision of its closed hours (latest_readings.history_revision), null without a reading.
 */
export interface AreaDevice { deviceId: number, sensorId: number, latitude: number | null, longitude: number | null, lastReadingAt: Date | null, historyRevision: number | null }

/**
 * The selection's devices that have a sensor of `measured` among their components (which the write
 * path adds for every sensor it stores), one row a device in id order: a kit with two sensors of a
 * measurement (two temperatures) counts once, by the lowest sensor id with a reading. Only active devices the
 * viewer may see. One statement, no readings touched.
 */
export async function areaDevices (h: Handle, v: Visibility, selection: ExportSelection, measured: MeasuredBy): Promise<AreaDevice[]> {
  const sql = h.sql
  const sensorMatch = 'measurementId' in measured
    ? sql`exists (select from sensors s where s.id = c.sensor_id and s.measurement_id = ${measured.measurementId})`
    : 'sensorId' in measured
      ? sql`c.sensor_id = ${measured.sensorId}`
      // The key as history resolves it: the kit's key, the component's, or the sensor's default.
      : sql`exists (select from sensors s left join kit_sensors ks on ks.sensor_id = s.id and ks.kit_id = d.kit_id
          where s.id = c.sensor_id and coalesce(ks.key, c.key, s.default_key) = ${measured.sensorKey})`
  const rows = await sql<Array<{ device_id: number, sensor_id: number, latitude: number | null, longitude: number | null, last_reading_at: unknown, history_revision: string | null }>>`
    select distinct on (d.id) d.id as device_id, c.sensor_id, d.latitude, d.longitude, l.recorded_at as last_reading_at, l.history_revision
    from devices d join components c on c.device_id = d.id
    left join latest_readings l on l.device_id = d.id and l.sensor_id = c.sensor_id
    where ${selectedDevicesSql(h, selection, v)} and ${sensorMatch}
    order by d.id, (l.recorded_at is null), c.sensor_id`
  return rows.map((row) => ({
    deviceId: row.device_id,
    sensorId: row.sensor_id,
    latitude: row.latitude,
    longitude: row.longitude,
    lastReadingAt: pgDateOrNull(row.last_reading_at),
    historyRevision: row.history_revision === null ? null : Number(row.history_revision)
  }))
}

/** Whether the measurement or sensor asked for exists (a key is a kit's name: any may be asked). */
export async function measuredExists (h: Handle, measured: MeasuredBy): Promise<boolean> {
  if ('sensorKey' in measured) return true
  const rows = 'measurementId' in measured
    ? await h.sql`select 1 from measurements where id = ${measured.measurementId}`
    : await h.sql`select 1 from sensors where id = ${measured.sensorId}`
  return rows.length > 0
}
