/**
 * `GET /v0/devices/compact_map`: what the map draws, in columns; the i-th device is the i-th item
 * of each (the route's OpenAPI description has the format).
 */
export interface CompactMap {
  count: number
  /** the first id, then each id minus the one before */
  id: number[]
  /** in 1e-5 degrees */
  lat: number[]
  lng: number[]
  /** a letter a device: o online, f offline, n new */
  condition: string
  /** a letter a device: i indoor, o outdoor */
  exposure: string
  name: string[]
  measurement?: number
  value?: Array<number | null>
}

/** A device as the map draws it, decoded from the compact map. */
export interface MapPoint {
  id: number
  name: string
  latitude: number
  longitude: number
  condition: 'online' | 'offline' | 'new'
  exposure: 'indoor' | 'outdoor'
  /** the latest value of the measurement the map was asked for; null without one */
  value: number | null
}

/** The parts of the API's answers the explorer reads (the contract's fields). */
export interface MapDevice {
  id: number
  name: string
  description: string | null
  owner_username: string
  latitude: number
  longitude: number
  city: string | null
  country_code: string | null
  state: string
  system_tags: string[]
  user_tags: string[]
  exposure: string | null
  last_reading_at: string | null
}

export interface DeviceSensor {
  id: number
  name: string
  description: string | null
  unit: string | null
  default_key: string | null
  measurement: { name: string, description: string | null } | null
  value: number | null
  raw_value: number | null
  last_reading_at: string | null
}

export interface Device {
  id: number
  uuid: string | null
  name: string
  description: string | null
  state: string
  system_tags: string[]
  user_tags: string[]
  last_reading_at: string | null
  created_at: string
  device_token?: string | null
  data_policy: { is_private: boolean, precise_location: boolean | '[FILTERED]' } | null
  location: { exposure: string | null, latitude: number | null, longitude: number | null, city: string | null, country: string | null, country_code: string | null } | null
  owner: { id: number, username: string, url: string | null, location: { city: string | null, country: string | null } | null } | null
  hardware: { name: string | null } | null
  data: { recorded_at: string | null, sensors: DeviceSensor[] } | null
}

export interface DeviceSummary {
  id: number
  name: string
  description: string | null
  latitude: number | null
  longitude: number | null
  state: string
  system_tags: string[]
  last_reading_at: string | null
}

export interface User {
  id: number
  username: string
  email: string | null
  url: string | null
  role: string
  location: { city: string | null, country: string | null, country_code: string | null } | null
  joined_at: string | null
  devices: DeviceSummary[]
}

export interface History {
  sensor_id: number
  readings: [string, number | null][]
}

/** `GET .../readings?sensor_ids=...`: a series per sensor, on the same buckets. */
export interface Histories {
  rollup: string
  function: string
  from: string
  to: string
  sensors: History[]
}

/** `GET /v0/measurements`: what the catalogue calls a measurement. */
export interface Measurement {
  id: number
  name: string
  description: string | null
}

/** `GET /v0/readings/statistics` with per_device=true (the parts the map reads). */
export interface AreaStatistics {
  rollup: string
  from: string
  to: string
  devices: number
  windows: Array<{ time: string, devices: number, mean: number, values?: Array<[number, number]> }>
}

/** A legend class of an interpolated grid: [from, to), the last one [from, to]. */
export interface LegendClass { from: number, to: number, color: string }

/** `GET /v0/readings/interpolation`: a GeoJSON FeatureCollection of cells, with its legend. */
export interface AreaGrid {
  type: 'FeatureCollection'
  bbox: [number, number, number, number]
  rollup: string
  from: string
  to: string
  cell_size: number
  max_distance: number
  steps: string[]
  devices: Array<{ id: number, latitude: number, longitude: number, values: Array<number | null> }>
  classes: LegendClass[]
  features: Array<{
    type: 'Feature'
    geometry: { type: 'Polygon', coordinates: number[][][] }
    properties: { values: Array<number | null>, class: Array<number | null> }
  }>
}
