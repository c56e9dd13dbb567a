import { Type, type TSchema } from '@sinclair/typebox'
import { REJECTION_REASONS } from '../readings/batch.js'

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])
const Str = Nullable(Type.String())
const Num = Nullable(Type.Number())

/** The string that stands for what the caller may not see. */
const Filtered = Type.String({ enum: ['[FILTERED]'] })
/** A setting only the owner and admins see: its value, or "[FILTERED]". */
const OwnersBoolean = (description: string) => Type.Union([Type.Boolean(), Filtered], { description: `${description}; "[FILTERED]" unless the caller owns the device or is an admin` })
const SensorRef = Type.Union([Type.Integer(), Type.String()])

/**
 * What the ingest did not store of the device's messages (issue 35). Bounded: counts, at most 20
 * sensors, and the last refusal's first problems.
 */
const IngestStatus = Type.Object({
  since: Type.String({ description: 'when the first problem counted here happened; the counts are since then' }),
  last_problem_at: Type.String({ description: 'when the latest one happened' }),
  unknown_sensors: Type.Array(SensorRef, { maxItems: 20, description: 'sensor ids (or keys) that no sensor has, the latest first, at most 20, from MQTT messages, the older /add and CSV imports: their values were skipped and the rest stored. A posted batch names its own in its answer instead' }),
  skipped_values: Type.Integer({ description: 'values skipped for those sensors' }),
  rejected_messages: Type.Integer({ description: 'messages (MQTT, the older /add) refused whole: nothing of them was stored. Posted batches are answered with a 422 instead and not counted' }),
  last_rejection: Nullable(Type.Object({
    at: Type.String(),
    reason: Type.String({ enum: [...REJECTION_REASONS], description: 'unreadable: not the format of its topic; invalid: a malformed item (a bad time or value); too_old and in_future: a time outside the accepted range; too_many_values' }),
    problems: Type.Record(Type.String(), Type.Array(Type.String()), { description: 'its first problems, as a 422 names them: path, messages (at most 10)' })
  }))
})

const DeviceLocation = Type.Object({
  ip: Str,
  exposure: Str,
  elevation: Num,
  latitude: Num,
  longitude: Num,
  geohash: Str,
  city: Str,
  country_code: Str,
  country: Str
})

/**
 * Contract: Device (full). The schema documents every key and serialises the response; parts whose
 * shape varies by caller (a status message object or "[FILTERED]", the data object) are open.
 */
export const Device = Type.Object({
  id: Type.Integer(),
  uuid: Nullable(Type.String({ format: 'uuid', description: 'null in the response to creation' })),
  name: Type.String(),
  description: Str,
  state: Type.String({ description: 'not_configured, never_published, has_published or archived; automatic' }),
  system_tags: Type.Array(Type.String(), { description: 'new, indoor/outdoor, online/offline' }),
  user_tags: Type.Array(Type.String()),
  last_reading_at: Str,
  created_at: Type.String(),
  added_at: Type.String(),
  updated_at: Type.String(),
  notify: Type.Object({ stopped_publishing: Type.Boolean(), low_battery: Type.Boolean() }),
  device_token: Nullable(Type.String({ description: 'the MQTT client id and topic token the kit is configured with: made by the platform (6 lower-case letters and digits; devices from before may hold longer ones), renewed by POST /devices/:id/device_token; [FILTERED] unless the caller owns the device or is an admin' })),
  mac_address: Nullable(Type.String({ description: '[FILTERED] unless the caller owns the device or is an admin' })),
  postprocessing: Nullable(Type.Object({}, { additionalProperties: true })),
  location: DeviceLocation,
  latitude: Num,
  longitude: Num,
  kit_id: Nullable(Type.Integer()),
  data_policy: Type.Object({
    is_private: Type.Boolean({ description: 'always shown' }),
    enable_forwarding: OwnersBoolean('forwarding of readings to the owner (researchers)'),
    precise_location: OwnersBoolean('false: the location is blurred to about a hundred metres'),
    forwarding_destination: Type.Union([Type.Null(), Filtered], { description: 'the forwarding destination\'s name: null (none); "[FILTERED]" unless the caller owns the device or is an admin' })
  }),
  hardware: Type.Object({
    name: Type.String(),
    type: Type.String(),
    version: Str,
    slug: Type.String(),
    last_status_message: Type.Unknown({ description: 'the last `info` message, or [FILTERED] unless owner or admin' })
  }),
  ingest: Type.Union([Filtered, Type.Null(), IngestStatus], {
    description: 'what the platform did not store of what the device sent: null when nothing was ever left out; "[FILTERED]" unless the caller owns the device or is an admin'
  }),
  owner: Nullable(Type.Object({
    id: Type.Integer(),
    uuid: Type.String(),
    username: Type.String(),
    avatar: Str,
    profile_picture: Type.String(),
    url: Str,
    joined_at: Type.String(),
    location: Type.Object({ city: Str, country: Str, country_code: Str }),
    device_ids: Type.Array(Type.Integer())
  })),
  data: Type.Optional(Type.Unknown({ description: 'recorded_at, added_at, location and sensors with their latest values' })),
  kit: Nullable(Type.Object({}, { additionalProperties: true })),
  experiment_ids: Type.Array(Type.Integer()),
  status: Type.String({ description: 'older form: new, online (a reading within 10 minutes) or offline' })
}, { $id: 'Device' })

/** Writable fields (contract: POST and PATCH /devices); the nested forms clients send are accepted too. */
export const DeviceBody = Type.Object({
  name: Type.Optional(Type.String()),
  description: Type.Optional(Str),
  mac_address: Type.Optional(Str),
  device_token: Type.Optional(Nullable(Type.String({ description: 'not accepted: the platform makes device tokens; a value is refused with 422 (POST /v0/devices/:id/device_token issues a new one); null or "" is ignored' }))),
  exposure: Type.Optional(Str),
  latitude: Type.Optional(Type.Unknown({ description: 'decimal degrees' })),
  longitude: Type.Optional(Type.Unknown({ description: 'decimal degrees' })),
  elevation: Type.Optional(Type.Unknown()),
  user_tags: Type.Optional(Type.Unknown({ description: 'comma-separated names of tags from GET /v0/tags' })),
  is_private: Type.Optional(Type.Unknown()),
  precise_location: Type.Optional(Type.Unknown()),
  enable_forwarding: Type.Optional(Type.Unknown({ description: 'researchers and admins' })),
  notify_low_battery: Type.Optional(Type.Unknown()),
  notify_stopped_publishing: Type.Optional(Type.Unknown()),
  kit_id: Type.Optional(Type.Unknown({ description: 'older form; the standard kit by default. An SmartCitizen Kit 1.0 or 1.1 (kits 2 and 3) is the hardware that posts to the older /add by its MAC address' })),
  postprocessing_attributes: Type.Optional(Type.Unknown({ description: 'researchers and admins' })),
  is_test: Type.Optional(Type.Unknown({ description: 'admins' })),
  meta: Type.Optional(Type.Unknown()),
  hardware_name_override: Type.Optional(Str),
  hardware_type_override: Type.Optional(Str),
  hardware_version_override: Type.Optional(Str),
  hardware_slug_override: Type.Optional(Str),
  location: Type.Optional(Type.Unknown({ description: 'nested form: {latitude, longitude, exposure, elevation}' })),
  data_policy: Type.Optional(Type.Unknown({ description: 'nested form: {is_private, precise_location, enable_forwarding}' })),
  notify: Type.Optional(Type.Unknown({ description: 'nested form: {low_battery, stopped_publishing}' })),
  device: Type.Optional(Type.Unknown({ description: 'the whole body wrapped, as Rails clients send it' }))
})
