import { and, asc, eq, inArray, isNull } from 'drizzle-orm'
import {
  components, devices, deviceTags, type Executor, experimentDevices, kits, latestReadings, measurements,
  postprocessings, sensors, sensorTags, tags, tagSensors, users
} from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { ownsOrAdmin, visibleTo } from './device-access.js'
import { presentSensor } from '../catalogue/catalogue-service.js'
import { countryName } from '../geo/country.js'
import { formatTimestamp } from '../time.js'
import { FILTERED, pictureUrl, userLocation, type UserRow } from '../users/user-presenter.js'
import { legacyStatus, systemTags } from './device-state.js'

export type DeviceRow = typeof devices.$inferSelect
type KitRow = typeof kits.$inferSelect
type PostprocessingRow = typeof postprocessings.$inferSelect
type SensorRow = typeof sensors.$inferSelect
type MeasurementRow = typeof measurements.$inferSelect

interface SensorReading {
  sensor: SensorRow
  measurement: MeasurementRow | null
  latest: typeof latestReadings.$inferSelect | null
  tags: string[]
}

/** Everything a device representation shows beyond its own row, loaded for a whole page at once. */
export interface DeviceRelations {
  owners: Map<number, UserRow>
  ownerDeviceIds: Map<number, number[]>
  kits: Map<number, KitRow>
  userTags: Map<number, string[]>
  postprocessing: Map<number, PostprocessingRow>
  experiments: Map<number, number[]>
  /** only when the representation carries `data` */
  sensors: Map<number, SensorReading[]> | null
}

const group = <K, V>(rows: V[], key: (row: V) => K): Map<K, V[]> => {
  const map = new Map<K, V[]>()
  for (const row of rows) {
    const k = key(row)
    const list = map.get(k)
    if (list === undefined) map.set(k, [row])
    else list.push(row)
  }
  return map
}

/**
 * The relations of many devices in a fixed number of queries (seven at most), whatever the page
 * size: device lists and user profiles must not make a round trip per device.
 */
export async function loadRelations (db: Executor, rows: DeviceRow[], viewer: Viewer | null, withData: boolean): Promise<DeviceRelations> {
  const ids = rows.map((d) => d.id)
  const ownerIds = [...new Set(rows.map((d) => d.ownerId))]
  const kitIds = [...new Set(rows.map((d) => d.kitId).filter((k): k is number => k !== null))]
  if (ids.length === 0) {
    return { owners: new Map(), ownerDeviceIds: new Map(), kits: new Map(), userTags: new Map(), postprocessing: new Map(), experiments: new Map(), sensors: withData ? new Map() : null }
  }
  const [owners, siblings, kitRows, tagRows, postRows, experimentRows, sensorRows, sensorTagRows] = await Promise.all([
    db.select().from(users).where(inArray(users.id, ownerIds)),
    db.select({ ownerId: devices.ownerId, id: devices.id }).from(devices)
      .where(and(inArray(devices.ownerId, ownerIds), isNull(devices.archivedAt), visibleTo(viewer))).orderBy(asc(devices.id)),
    kitIds.length === 0 ? Promise.resolve([]) : db.select().from(kits).where(inArray(kits.id, kitIds)),
    db.select({ deviceId: deviceTags.deviceId, name: tags.name }).from(deviceTags).innerJoin(tags, eq(tags.id, deviceTags.tagId))
      .where(inArray(deviceTags.deviceId, ids)).orderBy(asc(tags.name)),
    db.select().from(postprocessings).where(inArray(postprocessings.deviceId, ids)),
    db.select().from(experimentDevices).where(inArray(experimentDevices.deviceId, ids)).orderBy(asc(experimentDevices.experimentId)),
    withData
      ? db.select({ deviceId: components.deviceId, sensor: sensors, measurement: measurements, latest: latestReadings }).from(components)
        .innerJoin(sensors, eq(sensors.id, components.sensorId))
        .leftJoin(measurements, eq(measurements.id, sensors.measurementId))
        .leftJoin(latestReadings, and(eq(latestReadings.deviceId, components.deviceId), eq(latestReadings.sensorId, components.sensorId)))
        .where(inArray(components.deviceId, ids)).orderBy(asc(sensors.name), asc(sensors.id))
      : Promise.resolve([]),
    withData
      ? db.select({ sensorId: sensorTags.sensorId, name: tagSensors.name }).from(sensorTags)
        .innerJoin(tagSensors, eq(tagSensors.id, sensorTags.tagSensorId))
        .innerJoin(components, eq(components.sensorId, sensorTags.sensorId))
        .where(inArray(components.deviceId, ids)).orderBy(asc(tagSensors.name))
      : Promise.resolve([])
  ])
  // The join through components repeats a sensor's tags once per device that has it.
  const sensorTagNames = new Map([...group(sensorTagRows, (r) => r.sensorId)].map(([k, v]) => [k, [...new Set(v.map((t) => t.name))]]))
  return {
    owners: new Map(owners.map((u) => [u.id, u])),
    ownerDeviceIds: new Map([...group(siblings, (r) => r.ownerId)].map(([k, v]) => [k, v.map((r) => r.id)])),
    kits: new Map(kitRows.map((k) => [k.id, k])),
    userTags: new Map([...group(tagRows, (r) => r.deviceId)].map(([k, v]) => [k, v.map((r) => r.name)])),
    postprocessing: new Map(postRows.map((p) => [p.deviceId, p])),
    experiments: new Map([...group(experimentRows, (r) => r.deviceId)].map(([k, v]) => [k, v.map((r) => r.experimentId)])),
    sensors: withData
      ? new Map([...group(sensorRows, (r) => r.deviceId)].map(([k, v]) => [k, v.map((r) => ({
        sensor: r.sensor, measurement: r.measurement, latest: r.latest, tags: sensorTagNames.get(r.sensor.id) ?? []
      }))]))
      : null
  }
}

/** The owner and admins see a device's secrets and settings (contract: Authentication). */
export const canManage = ownsOrAdmin

/** `hardware` derived from the overrides or the status message's hw_ver (behaviour.md §5.1). */
type HardwareFacts = Pick<DeviceRow, 'lastStatusMessage' | 'hardwareNameOverride' | 'hardwareTypeOverride' | 'hardwareVersionOverride' | 'hardwareSlugOverride'>

export function hardwareOf (device: HardwareFacts, authorised: boolean) {
  const status = device.lastStatusMessage as Record<string, unknown> | null
  const reported = typeof status?.hw_ver === 'string' && status.hw_ver !== '' ? status.hw_ver : null
  const version = device.hardwareVersionOverride ?? reported
  const type = device.hardwareTypeOverride ?? (version !== null ? 'SCK' : 'Unknown')
  return {
    name: device.hardwareNameOverride ?? (version !== null ? `SmartCitizen Kit ${version}` : 'Unknown'),
    type,
    version,
    slug: device.hardwareSlugOverride ?? (version !== null ? `${type.toLowerCase()}:${version.replace(/\./g, ',')}` : 'unknown'),
    last_status_message: authorised ? (status ?? null) : FILTERED
  }
}

export function locationOf (device: DeviceRow) {
  return {
    ip: null,
    exposure: device.exposure,
    elevation: device.elevation,
    latitude: device.latitude,
    longitude: device.longitude,
    geohash: device.geohash,
    city: device.city,
    country_code: device.countryCode,
    country: countryName(device.countryCode)
  }
}

function presentSensorReading (entry: SensorReading) {
  const { sensor, latest } = entry
  return {
    ...presentSensor(sensor, entry.measurement, entry.tags),
    // The connector's model requires a string here (clients.md §4.26).
    description: sensor.description ?? '',
    value: latest?.value ?? null,
    raw_value: latest?.rawValue ?? null,
    prev_value: latest?.prevValue ?? null,
    prev_raw_value: latest?.prevRawValue ?? null,
    last_reading_at: formatTimestamp(latest?.recordedAt ?? null)
  }
}

function presentData (device: DeviceRow, readings: SensorReading[], location: ReturnType<typeof locationOf>) {
  let recordedAt: Date | null = null
  let addedAt: Date | null = null
  for (const { latest } of readings) {
    if (latest === null) continue
    if (recordedAt === null || latest.recordedAt > recordedAt) recordedAt = latest.recordedAt
    if (addedAt === null || latest.addedAt > addedAt) addedAt = latest.addedAt
  }
  const status = device.lastStatusMessage as Record<string, unknown> | null
  return {
    recorded_at: formatTimestamp(recordedAt ?? device.lastReadingAt),
    added_at: formatTimestamp(addedAt),
    calibrated_at: formatTimestamp(addedAt),
    firmware: typeof status?.sam_ver === 'string' ? status.sam_ver : null,
    location,
    sensors: readings.map(presentSensorReading)
  }
}

export interface PresentOptions {
  viewer: Viewer | null
  baseUrl: string
  now: Date
  /** the creation response shows uuid null (contract: Device, uuid) */
  creation?: boolean
}

/**
 * The full device (contract: Device; key order of behaviour.md §5.1, plus the older form's
 * `added_at`, `kit` and `status`). Secrets are `[FILTERED]` unless the caller owns the device or
 * is an admin; every object clients read is always an object (clients.md §4.26–27).
 */
export function presentDevice (device: DeviceRow, relations: DeviceRelations, options: PresentOptions) {
  const authorised = canManage(options.viewer, device)
  const owner = relations.owners.get(device.ownerId)
  const kit = device.kitId === null ? undefined : relations.kits.get(device.kitId)
  const post = relations.postprocessing.get(device.id)
  const location = locationOf(device)
  const readings = relations.sensors?.get(device.id)
  const picture = owner === undefined ? null : pictureUrl(options.baseUrl, owner.profilePicture)
  return {
    id: device.id,
    uuid: options.creation === true ? null : device.uuid,
    name: device.name,
    description: device.description,
    state: device.state,
    system_tags: systemTags(device, options.now),
    user_tags: relations.userTags.get(device.id) ?? [],
    last_reading_at: formatTimestamp(device.lastReadingAt),
    created_at: formatTimestamp(device.createdAt),
    added_at: formatTimestamp(device.createdAt),
    updated_at: formatTimestamp(device.updatedAt),
    notify: { stopped_publishing: device.notifyStoppedPublishing, low_battery: device.notifyLowBattery },
    device_token: authorised ? device.deviceToken : FILTERED,
    mac_address: authorised ? device.macAddress : FILTERED,
    postprocessing: post === undefined
      ? null
      : {
          id: post.id,
          blueprint_url: post.blueprintUrl,
          hardware_url: post.hardwareUrl,
          device_id: post.deviceId,
          forwarding_params: post.forwardingParams,
          meta: post.meta,
          latest_postprocessing: formatTimestamp(post.latestPostprocessing),
          created_at: formatTimestamp(post.createdAt),
          updated_at: formatTimestamp(post.updatedAt)
        },
    location,
    // The contract's device summary (a user's `devices`) reads these at the top level.
    latitude: device.latitude,
    longitude: device.longitude,
    kit_id: device.kitId,
    data_policy: {
      is_private: device.isPrivate,
      enable_forwarding: device.enableForwarding,
      precise_location: device.preciseLocation,
      forwarding_destination: null
    },
    hardware: hardwareOf(device, authorised),
    owner: owner === undefined
      ? null
      : {
          id: owner.id,
          uuid: owner.uuid,
          username: owner.username,
          avatar: picture,
          profile_picture: picture ?? '',
          url: owner.url,
          joined_at: formatTimestamp(owner.createdAt),
          location: userLocation(owner),
          device_ids: relations.ownerDeviceIds.get(owner.id) ?? []
        },
    ...(readings !== undefined || relations.sensors !== null ? { data: presentData(device, readings ?? [], location) } : {}),
    kit: kit === undefined
      ? null
      : { id: kit.id, uuid: kit.uuid, slug: kit.slug, name: kit.name, description: kit.description, created_at: formatTimestamp(kit.createdAt), updated_at: formatTimestamp(kit.updatedAt) },
    experiment_ids: relations.experiments.get(device.id) ?? [],
    status: legacyStatus(device, options.now)
  }
}

export type DeviceView = ReturnType<typeof presentDevice>

export async function presentDevices (db: Executor, rows: DeviceRow[], options: PresentOptions & { withData: boolean }): Promise<DeviceView[]> {
  const relations = await loadRelations(db, rows, options.viewer, options.withData)
  return rows.map((row) => presentDevice(row, relations, options))
}
