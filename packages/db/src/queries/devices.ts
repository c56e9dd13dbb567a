import { getTableColumns } from 'drizzle-orm'
import { toSnakeCase } from 'drizzle-orm/casing'
import type { Handle } from '../client.js'
import { users } from '../schema/users.js'
import type { IngestStatusRecord } from './ingest-status.js'
import { asStamp, type RevisionStamp, type StampColumns } from './revisions.js'
import { visibleText, type Visibility } from './visibility.js'

/*
 * The read statements of devices: a device and everything its representation shows (owner, the
 * owner's device ids, kit, tags, postprocessing, experiments, and each sensor with its latest and
 * previous values) in one statement, a page of devices and its total in one statement. Their text
 * is fixed when the module loads and run with `prepare: true`, so each connection parses and
 * plans them once: building SQL per request (Drizzle) and a statement per relation cost more than
 * the database did on these paths.
 *
 * Parameters shared by every statement: $2 the viewer's user id (or null), $3 whether the viewer
 * is an admin, $4 whether sensors and their values are wanted. The visibility rule is the text of
 * visibility.ts over $2 and $3.
 *
 * Every parameter is read through a subquery (`(select $4::bool)`), which the planner cannot fold
 * into a constant. With bare parameters each custom plan looked cheaper than the generic one (an
 * admin's `or true` drops the filter, a known limit shrinks the estimate), so PostgreSQL never
 * settled on the generic plan and planned these statements again on every execution: 4-7 ms,
 * twenty times the cost of running one. The generic plan is what a custom plan would be anyway.
 */

/*
 * Lists come back as json rather than PostgreSQL arrays: the driver parses json natively, arrays
 * character by character in JavaScript (a device lists every device id of its owner).
 */

/** A timestamptz as epoch milliseconds (floored, as a Date keeps them): no text to parse. */
const ms = (column: string): string => `floor(extract(epoch from ${column}) * 1000)::float8`

export interface OwnerRecord {
  id: number
  uuid: string
  username: string
  url: string | null
  profilePicture: string | null
  city: string | null
  countryCode: string | null
  createdAt: Date
}

export interface PostprocessingRecord {
  id: number
  deviceId: number
  blueprintUrl: string | null
  hardwareUrl: string | null
  forwardingParams: string | null
  meta: string | null
  latestPostprocessing: Date | null
  createdAt: Date
  updatedAt: Date
}

export interface LatestRecord {
  recordedAt: Date
  value: number | null
  rawValue: number | null
  prevValue: number | null
  prevRawValue: number | null
  addedAt: Date
}

/** One sensor of a device and its latest values; the sensor itself is reference data (domain catalogue). */
export interface ComponentRecord { sensorId: number, latest: LatestRecord | null }

/**
 * A device as its representation needs it, with every relation but the reference data (its kit
 * and its sensors' catalogue fields), which the domain keeps in memory: the stamp's `generation` is
 * the generation of that data this statement's snapshot saw.
 */
export interface DeviceReadRow {
  id: number
  uuid: string
  ownerId: number
  kitId: number | null
  name: string
  description: string | null
  state: string
  deviceToken: string | null
  macAddress: string | null
  exposure: string | null
  latitude: number | null
  longitude: number | null
  elevation: number | null
  geohash: string | null
  city: string | null
  countryCode: string | null
  isPrivate: boolean
  enableForwarding: boolean
  preciseLocation: boolean
  notifyStoppedPublishing: boolean
  notifyLowBattery: boolean
  hardwareNameOverride: string | null
  hardwareTypeOverride: string | null
  hardwareVersionOverride: string | null
  hardwareSlugOverride: string | null
  lastStatusMessage: unknown
  /** what the ingest did not store of its messages; null when nothing was ever left out */
  ingestStatus: IngestStatusRecord | null
  lastReadingAt: Date | null
  createdAt: Date
  updatedAt: Date
  owner: OwnerRecord | null
  ownerDeviceIds: number[]
  userTags: string[]
  postprocessing: PostprocessingRecord | null
  experimentIds: number[]
  /** null unless sensors were asked for; in no particular order */
  components: ComponentRecord[] | null
  /** what this statement's snapshot saw of the revisions its representation is kept by (revisions.ts) */
  stamp: RevisionStamp
}

/**
 * The columns of a DeviceReadRow over `d`, joined to `sib` (see `siblings`); `ownerIds` is the
 * expression of the owner's device ids.
 */
function selectList (ownerIds: string): string {
  return `
  d.id, d.uuid, d.owner_id as "ownerId", d.kit_id as "kitId", d.name, d.description, d.state,
  d.device_token as "deviceToken", d.mac_address::text as "macAddress", d.exposure, d.latitude, d.longitude,
  d.elevation, d.geohash, d.city, d.country_code as "countryCode", d.is_private as "isPrivate",
  d.enable_forwarding as "enableForwarding", d.precise_location as "preciseLocation",
  d.notify_stopped_publishing as "notifyStoppedPublishing", d.notify_low_battery as "notifyLowBattery",
  d.hardware_name_override as "hardwareNameOverride", d.hardware_type_override as "hardwareTypeOverride",
  d.hardware_version_override as "hardwareVersionOverride", d.hardware_slug_override as "hardwareSlugOverride",
  d.last_status_message as "lastStatusMessage",
  (select json_build_object('since', ${ms('s.since')}, 'lastProblemAt', ${ms('s.last_problem_at')}, 'unknownSensors', s.unknown_sensors,
      'skippedValues', s.skipped_values, 'rejectedMessages', s.rejected_messages, 'lastRejection', s.last_rejection)
    from device_ingest_status s where s.device_id = d.id) as "ingestStatus",
  ${ms('d.last_reading_at')} as "lastReadingAt", ${ms('d.created_at')} as "createdAt", ${ms('d.updated_at')} as "updatedAt",
  (select json_build_object('id', u.id, 'uuid', u.uuid, 'username', u.username, 'url', u.url,
      'profilePicture', u.profile_picture, 'city', u.city, 'countryCode', u.country_code, 'createdAt', ${ms('u.created_at')})
    from users u where u.id = d.owner_id) as owner,
  ${ownerIds} as "ownerDeviceIds",
  (select coalesce(json_agg(t.name order by t.name), '[]') from device_tags dt join tags t on t.id = dt.tag_id where dt.device_id = d.id) as "userTags",
  (select json_build_object('id', p.id, 'deviceId', p.device_id, 'blueprintUrl', p.blueprint_url, 'hardwareUrl', p.hardware_url,
      'forwardingParams', p.forwarding_params, 'meta', p.meta, 'latestPostprocessing', ${ms('p.latest_postprocessing')},
      'createdAt', ${ms('p.created_at')}, 'updatedAt', ${ms('p.updated_at')})
    from postprocessings p where p.device_id = d.id) as postprocessing,
  (select coalesce(json_agg(e.experiment_id order by e.experiment_id), '[]') from experiment_devices e where e.device_id = d.id) as "experimentIds",
  json_build_array(d.revision, (select u.revision from users u where u.id = d.owner_id),
    coalesce((select s.revision from device_ingest_status s where s.device_id = d.id), 0),
    (select value from catalogue_generation where id = 1)) as stamp,
  case when (select $4::bool) then coalesce((select json_agg(json_build_array(c.sensor_id,
      ${ms('l.recorded_at')}, l.value, l.raw_value, l.prev_value, l.prev_raw_value, ${ms('l.added_at')}))
    from components c left join latest_readings l on l.device_id = c.device_id and l.sensor_id = c.sensor_id
    where c.device_id = d.id), '[]'::json) end as components`
}

/** A users row as the query builder reads it (`select().from(users)`). */
export type UserRecord = typeof users.$inferSelect

const userColumns = Object.entries(getTableColumns(users))
/**
 * Every column of a users row `u` as one json object under the row's own keys, times in epoch ms.
 * Column names as the client's snake_case casing makes them (client.ts).
 */
const userJson = `json_build_object(${userColumns.map(([key, column]) => {
  const name = `u."${toSnakeCase(column.name)}"`
  return `'${key}', ${column.columnType === 'PgTimestamp' ? ms(name) : name}`
}).join(', ')})`
const userTimes = userColumns.filter(([, column]) => column.columnType === 'PgTimestamp').map(([key]) => key)

type Raw = Record<string, unknown>
const date = (value: unknown): Date => new Date(value as number)
const dateOrNull = (value: unknown): Date | null => value === null || value === undefined ? null : new Date(value as number)

/** `[sensor id, recorded at, value, raw value, previous, previous raw, added at]`, times in milliseconds. */
type RawComponent = [number, number | null, number | null, number | null, number | null, number | null, number | null]

function asComponent ([sensorId, recordedAt, value, rawValue, prevValue, prevRawValue, addedAt]: RawComponent): ComponentRecord {
  return {
    sensorId,
    latest: recordedAt === null ? null : { recordedAt: new Date(recordedAt), value, rawValue, prevValue, prevRawValue, addedAt: new Date(addedAt ?? recordedAt) }
  }
}

function asUser (raw: Raw): UserRecord {
  const user: Raw = { ...raw }
  for (const key of userTimes) user[key] = dateOrNull(raw[key])
  return user as UserRecord
}

/** A statement's row as a DeviceReadRow: times from milliseconds into Dates. */
function asRecord (row: Raw): DeviceReadRow {
  const owner = row.owner as Raw | null
  const post = row.postprocessing as Raw | null
  const components = row.components as RawComponent[] | null
  const ingest = row.ingestStatus as Raw | null
  return {
    ...row,
    ingestStatus: ingest === null ? null : { ...ingest, since: date(ingest.since), lastProblemAt: date(ingest.lastProblemAt) },
    lastReadingAt: dateOrNull(row.lastReadingAt),
    createdAt: date(row.createdAt),
    updatedAt: date(row.updatedAt),
    owner: owner === null ? null : { ...owner, createdAt: date(owner.createdAt) } as unknown as OwnerRecord,
    stamp: asStamp(row.stamp as StampColumns),
    postprocessing: post === null
      ? null
      : { ...post, latestPostprocessing: dateOrNull(post.latestPostprocessing), createdAt: date(post.createdAt), updatedAt: date(post.updatedAt) } as unknown as PostprocessingRecord,
    components: components === null ? null : components.map(asComponent)
  } as unknown as DeviceReadRow
}

/**
 * The rows of a list as DeviceReadRows. Only the first row of each owner carries the owner's device
 * ids (the driver would parse the same list again for every device); the others share its array.
 */
function asRecords (rows: Raw[]): DeviceReadRow[] {
  const records = rows.map(asRecord)
  const ids = new Map<number, number[]>()
  // null on every row of an owner but one, whatever the type says until here
  const carried = (record: DeviceReadRow): number[] | null => record.ownerDeviceIds
  for (const record of records) {
    const own = carried(record)
    if (own !== null) ids.set(record.ownerId, own)
  }
  for (const record of records) record.ownerDeviceIds = carried(record) ?? ids.get(record.ownerId) ?? []
  return records
}

/** Who reads: the visibility rule's parameters and whether sensors are wanted. */
export interface ReadScope extends Visibility { withData: boolean }

export interface DeviceReads {
  /** The active device with this id, whoever may see it (the caller checks access), or undefined. */
  byId: (h: Handle, id: number, scope: ReadScope) => Promise<DeviceReadRow | undefined>
  /** Active devices by id, in the order given; those the scope may not see are left out. */
  byIds: (h: Handle, ids: number[], scope: ReadScope) => Promise<DeviceReadRow[]>
  /** The active devices of these owners that the scope may see, by id. */
  ofOwners: (h: Handle, ownerIds: number[], scope: ReadScope) => Promise<DeviceReadRow[]>
  /** An active user (undefined when there is none) and their devices that the scope may see, by id. */
  ofUser: (h: Handle, userId: number, scope: ReadScope) => Promise<{ user: UserRecord | undefined, rows: DeviceReadRow[] }>
  /** A page of the active devices the scope may see, by id, and how many there are in all. */
  page: (h: Handle, page: { limit: number, offset: number }, scope: ReadScope) => Promise<{ rows: DeviceReadRow[], total: number }>
}

/** The statements, their text made once with the privacy rule's text (visibility.ts). */
function readStatements (visible: (alias: string) => string): DeviceReads {
  const listSelect = selectList("case when row_number() over (partition by d.owner_id) = 1 then coalesce(sib.ids, '[]') end")
  // The ids of each owner's devices, once per owner: every device of a page lists them, and
  // aggregating them again for each row was most of a page's time when one owner has many.
  const siblings = (owners: string): string => `siblings as (select o.owner_id, json_agg(o.id order by o.id) as ids from devices o
    where o.owner_id in (${owners}) and o.archived_at is null and ${visible('o')} group by o.owner_id)`
  const from = 'devices d left join siblings sib on sib.owner_id = d.owner_id'
  // One device: its owner's ids by a subquery on the owner's index, which needs neither the
  // grouping nor the sort of the lists' once-per-owner form (a sixth of the statement's time).
  const byId = `select ${selectList(`(select coalesce(json_agg(o.id order by o.id), '[]') from devices o
      where o.owner_id = d.owner_id and o.archived_at is null and ${visible('o')})`)} from devices d where d.id = $1 and d.archived_at is null`
  const byIds = `with ${siblings('select owner_id from devices where id in (select unnest((select $1::int4[])))')}
    select ${listSelect} from unnest((select $1::int4[])) with ordinality as wanted(id, n) join ${from} on d.id = wanted.id
    where d.archived_at is null and ${visible('d')} order by wanted.n`
  // Owners by a bare array: on PostgreSQL 18 (the embedded default) the generic plan of this
  // statement was slower than planning it each time (GET /users/:id 580/s against 765/s).
  const ofOwners = `with ${siblings('select unnest($1::int4[])')}
    select ${listSelect} from ${from} where d.owner_id = any($1::int4[]) and d.archived_at is null and ${visible('d')} order by d.id`
  // One owner (GET /users/:id, /me), by a parameter PostgreSQL plans once: the owner's index.
  const ofOwner = `with ${siblings('select (select $1::int4)')}
    select ${listSelect} from ${from} where d.owner_id = (select $1::int4) and d.archived_at is null and ${visible('d')} order by d.id`
  // GET /users/:id and /me in one statement: the user (first row only; null when there is none
  // or it is archived) beside the devices of ofOwner, or one row of nulls when there are none.
  const ofUser = `with ${siblings('select (select $1::int4)')}
    select case when row_number() over (order by x.id) = 1 then
        (select ${userJson} from users u where u.id = (select $1::int4) and u.archived_at is null) end as "user", x.*
    from (select 1) one left join (select ${listSelect} from ${from}
      where d.owner_id = (select $1::int4) and d.archived_at is null and ${visible('d')}) x on true order by x.id`
  // One row with a null id when the page is past the end, so the total still comes back. The page
  // walks the primary key and stops at its last row; the total counts the owner index alone.
  const page = `with wanted as (select d.id from devices d where d.archived_at is null and ${visible('d')}
      order by d.id limit (select $1::int8) offset (select $5::int8)),
    ${siblings('select owner_id from devices where id in (select id from wanted)')}
    select (select count(*) from devices c where c.archived_at is null and ${visible('c')}) as total, x.* from (select 1) one
    left join (select ${listSelect} from wanted join ${from} on d.id = wanted.id) x on true order by x.id`
  const params = (key: unknown, scope: ReadScope): Array<number | boolean | null | number[]> =>
    [key as number, scope.viewerId, scope.admin, scope.withData]
  const run = async (h: Handle, text: string, values: unknown[]): Promise<Raw[]> =>
    await h.sql.unsafe<Raw[]>(text, values as never[], { prepare: true })
  return {
    byId: async (h, id, scope) => {
      const [row] = await run(h, byId, params(id, scope))
      return row === undefined ? undefined : asRecord(row)
    },
    byIds: async (h, ids, scope) => ids.length === 0 ? [] : asRecords(await run(h, byIds, params(ids, scope))),
    ofOwners: async (h, ownerIds, scope) => {
      if (ownerIds.length === 0) return []
      const [only] = ownerIds
      return asRecords(ownerIds.length === 1 ? await run(h, ofOwner, params(only, scope)) : await run(h, ofOwners, params(ownerIds, scope)))
    },
    ofUser: async (h, userId, scope) => {
      const rows = await run(h, ofUser, params(userId, scope))
      const user = rows[0]?.user as Raw | null | undefined
      // The user's column goes before the rows become devices, on this statement's rows alone.
      const devices = rows.flatMap(({ user: _user, ...row }) => row.id === null ? [] : [row])
      return { user: user === null || user === undefined ? undefined : asUser(user), rows: asRecords(devices) }
    },
    page: async (h, { limit, offset }, scope) => {
      const rows = await run(h, page, [...params(limit, scope), offset])
      return { rows: asRecords(rows.filter((r) => r.id !== null)), total: Number(rows[0]?.total ?? 0) }
    }
  }
}

const statements = readStatements(visibleText)

/** The active device with this id, whoever may see it (the caller checks access), or undefined. */
export const readDevice = statements.byId
/** Active devices by id, in the order given; those the scope may not see are left out. */
export const readDevices = statements.byIds
/** The active devices of these owners that the scope may see, by id. */
export const readDevicesOfOwners = statements.ofOwners
/** An active user (undefined when there is none) and their devices that the scope may see, by id. */
export const readUserWithDevices = statements.ofUser
/** A page of the active devices the scope may see, by id, and how many there are in all. */
export const readDevicePage = statements.page
