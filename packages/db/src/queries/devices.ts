import { and, eq, getTableColumns, inArray, isNull, ne, sql as drizzleSql, type SQL } from 'drizzle-orm'
import { toSnakeCase } from 'drizzle-orm/casing'
import { type Handle, inSavepoint } from '../client.js'
import { kits, kitSensors, tags } from '../schema/catalogue.js'
import { components, devices, deviceTags, postprocessings } from '../schema/devices.js'
import { users } from '../schema/users.js'
import type { IngestStatusRecord } from './ingest-status.js'
import { asStamp, type DeviceStampRow, type RevisionStamp, type StampColumns, type Stamped } from './revisions.js'
import { type FilterSpec, type ListQuery, listOrder, listPage, listWhere } from './lists.js'
import { visibleDrizzle, visibleText, type Visibility } from './visibility.js'

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

// ---------------------------------------------------------------- rows and access

export type DeviceRow = typeof devices.$inferSelect
/** What a write sets on a device's row. */
export type DeviceValues = Partial<typeof devices.$inferInsert>

/** The full row of an active device, or undefined. */
export async function activeDeviceRow (h: Handle, id: number): Promise<DeviceRow | undefined> {
  const [row] = await h.db.select().from(devices).where(and(eq(devices.id, id), isNull(devices.archivedAt))).limit(1)
  return row
}

/** What the reading paths need of an active device: who may see or write it, its kit, where its readings go. */
export interface DeviceAccessRow { id: number, owner_id: number, is_private: boolean, kit_id: number | null, forwarding_token: string | null, device_token: string | null }

/**
 * Active devices by id or by MQTT token, in one prepared query: these are the hot paths, so they
 * skip the full row and the query builder. Exactly one of the keys is given.
 */
async function accessRows (h: Handle, by: { id: number } | { tokens: string[] }): Promise<DeviceAccessRow[]> {
  const { sql } = h
  const where = 'id' in by ? sql`d.id = ${by.id}` : sql`d.device_token = any(${by.tokens}::text[])`
  return await sql<DeviceAccessRow[]>`
    select d.id, d.owner_id, d.is_private, d.kit_id, d.device_token,
      case when d.enable_forwarding then u.forwarding_token end as forwarding_token
    from devices d join users u on u.id = d.owner_id
    where d.archived_at is null and ${where}`
}

/** The access row of the active device with this id, or undefined. */
export const deviceAccessById = async (h: Handle, id: number): Promise<DeviceAccessRow | undefined> => (await accessRows(h, { id }))[0]

/** The access rows of the active devices holding these tokens (matched exactly). */
export const deviceAccessByTokens = async (h: Handle, tokens: string[]): Promise<DeviceAccessRow[]> =>
  tokens.length === 0 ? [] : await accessRows(h, { tokens })

/** An access row with the owner's `legacy_api_key`, for the older `/add`. */
export interface LegacyAddRow { id: number, owner_id: number, is_private: boolean, kit_id: number | null, forwarding_token: string | null, legacy_api_key: string | null }

/** The newest active device with this MAC address whose kit has one of these slugs, or undefined. */
export async function legacyAddRow (h: Handle, mac: string, kitSlugs: readonly string[]): Promise<LegacyAddRow | undefined> {
  const [row] = await h.sql<LegacyAddRow[]>`
    select d.id, d.owner_id, d.is_private, d.kit_id, u.legacy_api_key,
      case when d.enable_forwarding then u.forwarding_token end as forwarding_token
    from devices d join users u on u.id = d.owner_id join kits k on k.id = d.kit_id
    where d.archived_at is null and d.mac_address = ${mac}::macaddr and k.slug = any(${[...kitSlugs]}::text[])
    order by d.id desc limit 1`
  return row
}

// ---------------------------------------------------------------- the list

const tagExists = (condition: SQL): SQL =>
  drizzleSql`exists (select 1 from ${deviceTags} join ${tags} on ${tags.id} = ${deviceTags.tagId} where ${deviceTags.deviceId} = ${devices.id} and ${condition})`

/** Contract: Filtering (devices), older-form keys too; secrets and admin columns for admins only. */
export const deviceFilters: FilterSpec = {
  id: { column: devices.id, type: 'integer' },
  uuid: { column: devices.uuid, type: 'uuid' },
  name: { column: devices.name, type: 'text' },
  description: { column: devices.description, type: 'text' },
  owner_id: { column: devices.ownerId, type: 'integer' },
  owner_username: { column: drizzleSql`(select ${users.username} from ${users} where ${users.id} = ${devices.ownerId})`, type: 'text' },
  created_at: { column: devices.createdAt, type: 'timestamp' },
  updated_at: { column: devices.updatedAt, type: 'timestamp' },
  last_recorded_at: { column: devices.lastReadingAt, type: 'timestamp' },
  last_reading_at: { column: devices.lastReadingAt, type: 'timestamp' },
  state: { column: devices.state, type: 'text' },
  exposure: { column: devices.exposure, type: 'text' },
  kit_id: { column: devices.kitId, type: 'integer' },
  geohash: { column: devices.geohash, type: 'text' },
  city: { column: devices.city, type: 'text' },
  country_code: { column: devices.countryCode, type: 'text' },
  tag_name: { column: tags.name, type: 'text', wrap: tagExists },
  tags_name: { column: tags.name, type: 'text', wrap: tagExists },
  postprocessing_id: { column: drizzleSql`(select ${postprocessings.id} from ${postprocessings} where ${postprocessings.deviceId} = ${devices.id})`, type: 'integer' },
  mac_address: { column: drizzleSql`${devices.macAddress}::text`, type: 'text', adminOnly: true },
  token: { column: devices.deviceToken, type: 'text', adminOnly: true },
  device_token: { column: devices.deviceToken, type: 'text', adminOnly: true },
  is_private: { column: devices.isPrivate, type: 'boolean', adminOnly: true },
  is_test: { column: devices.isTest, type: 'boolean', adminOnly: true }
}

/** Great-circle distance in km from a point, in SQL: `near` orders by it (behaviour.md §5.4). */
function distanceKm (lat: number, lng: number): SQL {
  return drizzleSql`(6371 * 2 * asin(sqrt(power(sin(radians(${devices.latitude} - ${lat}::float8) / 2), 2)
    + cos(radians(${lat}::float8)) * cos(radians(${devices.latitude})) * power(sin(radians(${devices.longitude} - ${lng}::float8) / 2), 2))))`
}

export interface DeviceListOptions {
  /** devices with any of these tags */
  withTags: string[]
  /** nearest first, within `within` km of the point */
  near?: { latitude: number, longitude: number, within: number } | undefined
}

/** What the list's cheap statement reads of each device: the stamp's columns (revisions.ts). */
const stampColumns = {
  id: devices.id,
  ownerId: devices.ownerId,
  isPrivate: devices.isPrivate,
  revision: devices.revision,
  ownerRevision: drizzleSql<number>`(select ${users.revision} from ${users} where ${users.id} = ${devices.ownerId})`,
  statusRevision: drizzleSql<number>`coalesce((select s.revision from device_ingest_status s where s.device_id = ${devices.id}), 0)`,
  generation: drizzleSql<number>`(select value from catalogue_generation where id = 1)`,
  authGeneration: drizzleSql<number>`(select value from auth_generation where id = 1)`
}

/** The stamps of a page of the active devices the viewer may see, filtered and sorted, the total, and the auth generation. */
export async function listDeviceStamps (h: Handle, query: ListQuery, options: DeviceListOptions, v: Visibility): Promise<Stamped<{ rows: DeviceStampRow[], total: number }>> {
  // The filters' conditions are in the scope and again in listPage's own: the statement as it was.
  const conditions: Array<SQL | undefined> = [isNull(devices.archivedAt), visibleDrizzle({ isPrivate: devices.isPrivate, ownerId: devices.ownerId }, v), listWhere(deviceFilters, query.filters)]
  let order: SQL[] | undefined
  if (options.withTags.length > 0) conditions.push(tagExists(inArray(tags.name, options.withTags)))
  if (options.near !== undefined) {
    const distance = distanceKm(options.near.latitude, options.near.longitude)
    conditions.push(drizzleSql`${devices.latitude} is not null and ${distance} <= ${options.near.within}`)
    order = [drizzleSql`${distance} asc`, ...listOrder(deviceFilters, query.sort)]
  }
  const { rows, total } = await listPage(h, devices, deviceFilters, query, devices.id, and(...conditions), order, stampColumns as unknown as { id: typeof devices.id })
  const read = rows as unknown as Array<typeof stampColumns & Record<keyof typeof stampColumns, number & boolean>>
  return {
    found: {
      rows: read.map((r) => ({ id: r.id, ownerId: r.ownerId, isPrivate: r.isPrivate, stamp: { revision: r.revision, ownerRevision: r.ownerRevision, statusRevision: r.statusRevision, generation: r.generation } })),
      total
    },
    // An empty page read none: the caller checks credentials the full way.
    authGeneration: read[0]?.authGeneration
  }
}

// ---------------------------------------------------------------- writes

/** The ids of the tags with these names, with their names. */
export async function tagsNamed (h: Handle, names: string[]): Promise<Array<{ id: number, name: string }>> {
  return await h.db.select({ id: tags.id, name: tags.name }).from(tags).where(inArray(tags.name, names))
}

/** Whether a kit with this id exists. */
export async function kitExists (h: Handle, kitId: number): Promise<boolean> {
  const [kit] = await h.db.select({ id: kits.id }).from(kits).where(eq(kits.id, kitId)).limit(1)
  return kit !== undefined
}

/**
 * Inserts a device in a savepoint of its own (in a transaction): a clash of its token rolls back
 * the savepoint alone, so the transaction stays usable for the next try.
 */
export async function insertDevice (tx: Handle, values: typeof devices.$inferInsert): Promise<DeviceRow | undefined> {
  return await inSavepoint(tx, async (sp) => (await sp.db.insert(devices).values(values).returning())[0])
}

/**
 * MAC takeover (behaviour.md §5.3): every other device holding the MAC, archived ones too, moves
 * it to old_mac_address.
 */
export async function takeOverMac (h: Handle, mac: string, exceptId: number, now: Date): Promise<void> {
  await h.db.update(devices)
    .set({ oldMacAddress: mac, macAddress: null, updatedAt: now, state: drizzleSql`case when ${devices.state} = 'never_published' then 'not_configured' else ${devices.state} end` })
    .where(and(eq(devices.macAddress, mac), ne(devices.id, exceptId)))
}

/** The device's tags become exactly these. */
export async function replaceDeviceTags (h: Handle, deviceId: number, tagIds: number[]): Promise<void> {
  await h.db.delete(deviceTags).where(eq(deviceTags.deviceId, deviceId))
  if (tagIds.length > 0) await h.db.insert(deviceTags).values(tagIds.map((tagId) => ({ deviceId, tagId }))).onConflictDoNothing()
}

export type PostprocessingValues = Partial<Pick<typeof postprocessings.$inferInsert, 'blueprintUrl' | 'hardwareUrl' | 'forwardingParams' | 'meta' | 'latestPostprocessing'>>

/** The device's postprocessing row, made or changed. */
export async function upsertPostprocessing (h: Handle, deviceId: number, values: PostprocessingValues, now: Date): Promise<void> {
  await h.db.insert(postprocessings).values({ deviceId, ...values })
    .onConflictDoUpdate({ target: postprocessings.deviceId, set: { ...values, updatedAt: now } })
}

/** The kit's sensors become the device's components. */
export async function addKitComponents (h: Handle, deviceId: number, kitId: number): Promise<void> {
  await h.db.execute(drizzleSql`insert into ${components} (device_id, sensor_id) select ${deviceId}, ${kitSensors.sensorId} from ${kitSensors} where ${kitSensors.kitId} = ${kitId} on conflict do nothing`)
}

/** Changes a device's row (archived or not); undefined when there is none. */
export async function updateDeviceRow (h: Handle, id: number, values: DeviceValues): Promise<DeviceRow | undefined> {
  const [row] = await h.db.update(devices).set(values).where(eq(devices.id, id)).returning()
  return row
}

/** A new token for an active device; undefined when it is not (or no longer) active. */
export async function setDeviceToken (h: Handle, id: number, deviceToken: string, now: Date): Promise<DeviceRow | undefined> {
  const [row] = await h.db.update(devices).set({ deviceToken, updatedAt: now })
    .where(and(eq(devices.id, id), isNull(devices.archivedAt))).returning()
  return row
}

/** Archives a device: hidden everywhere, its MAC kept aside. */
export async function archiveDeviceRow (h: Handle, id: number, macAddress: string | null, now: Date): Promise<void> {
  await h.db.update(devices).set({ archivedAt: now, state: 'archived', oldMacAddress: macAddress, macAddress: null, updatedAt: now })
    .where(eq(devices.id, id))
}

/** A device's row, archived or not, locked for update (in a transaction); undefined when there is none. */
export async function lockDeviceRow (tx: Handle, id: number): Promise<DeviceRow | undefined> {
  const [device] = await tx.db.select().from(devices).where(eq(devices.id, id)).for('update')
  return device
}

/** Whether any device holds this MAC address. */
export async function macAddressTaken (h: Handle, mac: string): Promise<boolean> {
  return (await h.db.select({ id: devices.id }).from(devices).where(eq(devices.macAddress, mac)).limit(1)).length > 0
}

// ---------------------------------------------------------------- the world map

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
