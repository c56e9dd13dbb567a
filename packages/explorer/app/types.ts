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
