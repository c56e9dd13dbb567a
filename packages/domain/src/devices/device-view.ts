import type { Viewer } from '../auth/viewer.js'
import { canManage, type DeviceRecord, type DeviceRow, type DeviceSensor } from './device-access.js'
import { countryName } from '../geo/country.js'
import { formatTimestamp } from '../time.js'
import { FILTERED, pictureUrl, userLocation } from '../users/user-presenter.js'
import { legacyStatus, systemTags } from './device-state.js'

/*
 * The device representation from a DeviceRecord, which the read statements of packages/db load
 * with every relation (device-access.ts loadDevice, device-service.ts listDevices): no queries here.
 */

export type { DeviceRow }

/**
 * What the ingest did not store of the device's messages (issue 35), for its owner and admins;
 * null when nothing was ever left out. Everyone else gets "[FILTERED]", as for the status message.
 */
export function ingestOf (device: Pick<DeviceRecord, 'ingestStatus'>, authorised: boolean) {
  if (!authorised) return FILTERED
  const status = device.ingestStatus
  if (status === null) return null
  const rejection = status.lastRejection
  return {
    since: formatTimestamp(status.since),
    last_problem_at: formatTimestamp(status.lastProblemAt),
    unknown_sensors: status.unknownSensors,
    skipped_values: status.skippedValues,
    rejected_messages: status.rejectedMessages,
    last_rejection: rejection === null ? null : { at: formatTimestamp(new Date(rejection.at)), reason: rejection.reason, problems: rejection.problems }
  }
}

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

export function locationOf (device: Pick<DeviceRow, 'exposure' | 'elevation' | 'latitude' | 'longitude' | 'geohash' | 'city' | 'countryCode'>) {
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

/**
 * The sensor's representation (made once per generation of the reference data) with the device's
 * values. Written out key by key: a spread of the shared view into a literal with more keys made
 * each of a device's sensors a slow object, most of a device's presenting time.
 */
function presentSensorReading ({ sensor, view, latest }: DeviceSensor) {
  return {
    id: view.id,
    uuid: view.uuid,
    parent_id: view.parent_id,
    ancestry: view.ancestry,
    name: view.name,
    // The connector's model requires a string here (clients.md §4.26).
    description: sensor.description ?? '',
    unit: view.unit,
    tags: view.tags,
    datasheet: view.datasheet,
    unit_definition: view.unit_definition,
    measurement_id: view.measurement_id,
    default_key: view.default_key,
    created_at: view.created_at,
    updated_at: view.updated_at,
    measurement: view.measurement,
    value: latest?.value ?? null,
    raw_value: latest?.rawValue ?? null,
    prev_value: latest?.prevValue ?? null,
    prev_raw_value: latest?.prevRawValue ?? null,
    last_reading_at: formatTimestamp(latest?.recordedAt ?? null)
  }
}

function presentData (device: DeviceRecord, readings: DeviceSensor[], location: ReturnType<typeof locationOf>) {
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
 * `added_at`, `kit` and `status`, and `ingest`). Secrets and settings (device_token, mac_address,
 * data_policy but is_private, hardware.last_status_message, ingest) are `[FILTERED]` unless the
 * caller owns the device or is an admin; every object clients read is always an object
 * (clients.md §4.26–27).
 */
export function presentDevice (device: DeviceRecord, options: PresentOptions) {
  const authorised = canManage(options.viewer, device)
  const owner = device.owner
  const kit = device.kit
  const post = device.postprocessing
  const location = locationOf(device)
  const readings = device.sensors
  const picture = owner === null ? null : pictureUrl(options.baseUrl, owner.profilePicture)
  return {
    id: device.id,
    uuid: options.creation === true ? null : device.uuid,
    name: device.name,
    description: device.description,
    state: device.state,
    system_tags: systemTags(device, options.now),
    user_tags: device.userTags,
    last_reading_at: formatTimestamp(device.lastReadingAt),
    created_at: formatTimestamp(device.createdAt),
    added_at: formatTimestamp(device.createdAt),
    updated_at: formatTimestamp(device.updatedAt),
    notify: { stopped_publishing: device.notifyStoppedPublishing, low_battery: device.notifyLowBattery },
    device_token: authorised ? device.deviceToken : FILTERED,
    mac_address: authorised ? device.macAddress : FILTERED,
    postprocessing: post === null
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
    // behaviour.md §5.1 item 16: is_private is always real, the rest is the owner's and admins'.
    data_policy: {
      is_private: device.isPrivate,
      enable_forwarding: authorised ? device.enableForwarding : FILTERED,
      precise_location: authorised ? device.preciseLocation : FILTERED,
      forwarding_destination: authorised ? null : FILTERED
    },
    hardware: hardwareOf(device, authorised),
    ingest: ingestOf(device, authorised),
    owner: owner === null
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
          device_ids: device.ownerDeviceIds
        },
    ...(readings !== null ? { data: presentData(device, readings, location) } : {}),
    kit: kit === null
      ? null
      : { id: kit.id, uuid: kit.uuid, slug: kit.slug, name: kit.name, description: kit.description, created_at: formatTimestamp(kit.createdAt), updated_at: formatTimestamp(kit.updatedAt) },
    experiment_ids: device.experimentIds,
    status: legacyStatus(device, options.now)
  }
}

export type DeviceView = ReturnType<typeof presentDevice>

export function presentDevices (records: DeviceRecord[], options: PresentOptions): DeviceView[] {
  return records.map((record) => presentDevice(record, options))
}
