import type { Handle } from '../client.js'

/*
 * The statements of the world map and the explorer's compact map (domain world-map.ts): every
 * active, located, non-test device with what the maps show, read once per build, and the cheap
 * fingerprint that says when a build is stale.
 */

/**
 * What decides whether the world map is stale, in two parts, from the revisions (migration 0009):
 * `devices`, what may hide a device or change who sees it (the count of active devices, the
 * newest device edit, the newest owner revision, which moves when a device is created, archived,
 * restored, made private or given away, and the catalogue's generation, which names the
 * measurements); `readings`, the newest device revision, which every stored batch of readings
 * moves.
 */
export async function worldMapFingerprint (h: Handle): Promise<{ devices: string, readings: string }> {
  const [row] = await h.sql<Array<{ d: string, r: string | null }>>`
    select concat_ws('|', count(*), max(updated_at), (select max(revision) from users), (select value from catalogue_generation where id = 1)) as d,
           max(revision)::text as r
    from devices where archived_at is null`
  return { devices: row?.d ?? '', readings: row?.r ?? '' }
}

export interface WorldMapDeviceRow {
  id: number
  name: string
  description: string | null
  owner_id: number
  owner_username: string
  latitude: number
  longitude: number
  city: string | null
  country_code: string | null
  kit_id: number | null
  state: string
  exposure: string | null
  created_ms: number
  last_reading_ms: number | null
  is_private: boolean
  hw_ver: string | null
  hardware_name_override: string | null
  hardware_type_override: string | null
  hardware_version_override: string | null
  hardware_slug_override: string | null
}

export interface WorldMapLatestRow { device_id: number, sensor_id: number, measurement_id: number | null, value: number | null, raw_value: number | null, recorded_ms: number, added_ms: number }

/**
 * Everything the world map shows: every active, located, non-test device (private ones too), the
 * tags of devices by name, the latest values of those devices by device and sensor (with the
 * sensor's measurement), and the ids of the measurements (what the compact map may be coloured by).
 */
export async function worldMapRows (h: Handle): Promise<{ devices: WorldMapDeviceRow[], tags: Array<{ device_id: number, name: string }>, latest: WorldMapLatestRow[], measurements: number[] }> {
  const { sql } = h
  const [devices, tags, latest, measurements] = await Promise.all([
    sql<WorldMapDeviceRow[]>`
        select d.id, d.name, d.description, d.owner_id, u.username as owner_username, d.latitude, d.longitude, d.city, d.country_code,
               d.kit_id, d.state, d.exposure, extract(epoch from d.created_at) * 1000 as created_ms,
               extract(epoch from d.last_reading_at) * 1000 as last_reading_ms, d.is_private, d.last_status_message ->> 'hw_ver' as hw_ver,
               d.hardware_name_override, d.hardware_type_override, d.hardware_version_override, d.hardware_slug_override
        from devices d join users u on u.id = d.owner_id
        where d.archived_at is null and not d.is_test and d.latitude is not null and d.longitude is not null
        order by d.id`,
    sql<Array<{ device_id: number, name: string }>>`
        select dt.device_id, t.name from device_tags dt join tags t on t.id = dt.tag_id order by t.name`,
    sql<WorldMapLatestRow[]>`
        select l.device_id, l.sensor_id, s.measurement_id, l.value, l.raw_value, extract(epoch from l.recorded_at) * 1000 as recorded_ms,
               extract(epoch from l.added_at) * 1000 as added_ms
        from latest_readings l join devices d on d.id = l.device_id left join sensors s on s.id = l.sensor_id
        where d.archived_at is null and not d.is_test and d.latitude is not null
        order by l.device_id, l.sensor_id`,
    sql<Array<{ id: number }>>`select id from measurements order by id`
  ])
  return { devices, tags, latest, measurements: measurements.map((m) => m.id) }
}
