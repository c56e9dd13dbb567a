import { randomInt } from 'node:crypto'
import { and, eq, inArray, isNull, ne, sql, type SQL } from 'drizzle-orm'
import {
  components, type Db, defaultKitId, devices, deviceTags, type Executor, isPgCode, kitSensors, kits, PgCode, pgError,
  postprocessings, type Sql, tags, type UserRecord, users
} from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { blur, geohashOf, reverseGeocode, truncate5 } from '../geo/location.js'
import type { FilterSpec, ListQuery } from '../lists/filter-compiler.js'
import { listPage } from '../lists/page.js'
import { type DeviceInput, parseDeviceBody } from './device-rules.js'
import { assertCanWrite, type DeviceRecord, type DeviceRow, parseDeviceId, readScope, reads, visibleTo } from './device-access.js'

const tagExists = (condition: SQL): SQL =>
  sql`exists (select 1 from ${deviceTags} join ${tags} on ${tags.id} = ${deviceTags.tagId} where ${deviceTags.deviceId} = ${devices.id} and ${condition})`

/** Contract: Filtering (devices), older-form keys too; secrets and admin columns for admins only. */
export const deviceFilters: FilterSpec = {
  id: { column: devices.id, type: 'integer' },
  uuid: { column: devices.uuid, type: 'uuid' },
  name: { column: devices.name, type: 'text' },
  description: { column: devices.description, type: 'text' },
  owner_id: { column: devices.ownerId, type: 'integer' },
  owner_username: { column: sql`(select ${users.username} from ${users} where ${users.id} = ${devices.ownerId})`, type: 'text' },
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
  postprocessing_id: { column: sql`(select ${postprocessings.id} from ${postprocessings} where ${postprocessings.deviceId} = ${devices.id})`, type: 'integer' },
  mac_address: { column: sql`${devices.macAddress}::text`, type: 'text', adminOnly: true },
  token: { column: devices.deviceToken, type: 'text', adminOnly: true },
  device_token: { column: devices.deviceToken, type: 'text', adminOnly: true },
  is_private: { column: devices.isPrivate, type: 'boolean', adminOnly: true },
  is_test: { column: devices.isTest, type: 'boolean', adminOnly: true }
}

export interface DeviceServiceOptions {
  now: Date
  /** the blur's randomness; tests pass a fixed one */
  random?: () => number
}

/** Automatic state (contract: States and transitions): nothing a client sends can set it. */
export function stateFor (device: { macAddress: string | null, lastReadingAt: Date | null, state: string, archivedAt: Date | null }): DeviceRow['state'] {
  if (device.archivedAt !== null) return 'archived'
  if (device.lastReadingAt !== null || device.state === 'has_published') return 'has_published'
  return device.macAddress === null ? 'not_configured' : 'never_published'
}

const NEAR = /^(-?\d+(?:\.\d+)?),\s*(-?\d+(?:\.\d+)?)$/

/** Great-circle distance in km from a point, in SQL: `near` orders by it (behaviour.md §5.4). */
function distanceKm (lat: number, lng: number): SQL {
  return sql`(6371 * 2 * asin(sqrt(power(sin(radians(${devices.latitude} - ${lat}::float8) / 2), 2)
    + cos(radians(${lat}::float8)) * cos(radians(${devices.latitude})) * power(sin(radians(${devices.longitude} - ${lng}::float8) / 2), 2))))`
}

export interface DeviceListParams { near?: string | undefined, within?: string | undefined, withTags?: string | undefined }

/**
 * A page of devices with everything their representation shows, and the total. The plain list
 * (no filter, sort, near or tags: what dashboards poll) is one prepared statement; a filtered
 * one finds the page's ids through the filter compiler, then reads them with the same statement.
 */
export async function listDevices (database: { db: Executor, sql: Sql }, query: ListQuery, params: DeviceListParams, viewer: Viewer | null): Promise<{ rows: DeviceRecord[], total: number }> {
  const scope = readScope(viewer, true)
  const offset = (query.page - 1) * query.perPage
  const withTags = params.withTags?.split('|').map((t) => t.trim()).filter((t) => t !== '') ?? []
  if (query.where === undefined && query.orderBy.length === 0 && params.near === undefined && withTags.length === 0) {
    return await reads.page(database.sql, { limit: query.perPage, offset }, scope)
  }
  const conditions: Array<SQL | undefined> = [isNull(devices.archivedAt), visibleTo(viewer), query.where]
  let order = query.orderBy
  if (withTags.length > 0) conditions.push(tagExists(inArray(tags.name, withTags)))
  if (params.near !== undefined) {
    const match = NEAR.exec(params.near.trim())
    const lat = Number(match?.[1])
    const lng = Number(match?.[2])
    if (match === null || Math.abs(lat) > 90 || Math.abs(lng) > 180) {
      throw errors.badRequest('near must be "<latitude>,<longitude>", e.g. near=41.39,2.17', { near: ['must be "<latitude>,<longitude>"'] })
    }
    const within = params.within === undefined || params.within === '' ? 1000 : Number(params.within)
    if (!Number.isFinite(within) || within <= 0) throw errors.badRequest('within must be a positive number of kilometres', { within: ['must be a positive number of kilometres'] })
    const distance = distanceKm(lat, lng)
    conditions.push(sql`${devices.latitude} is not null and ${distance} <= ${within}`)
    order = [sql`${distance} asc`, ...query.orderBy]
  }
  const { rows, total } = await listPage(database.db, devices, query, devices.id, and(...conditions), order, { id: devices.id })
  return { rows: await reads.byIds(database.sql, rows.map((r) => r.id), scope), total }
}

/** Active devices of several owners, as the caller may see them, without data (a user's `devices`). */
export async function devicesOfOwners (sql: Sql, ownerIds: number[], viewer: Viewer | null): Promise<DeviceRecord[]> {
  return await reads.ofOwners(sql, ownerIds, readScope(viewer, false))
}

/** GET /users/:id and /me: an active user by id and their devices, in one statement; 404 when there is none. */
export async function userWithDevices (sql: Sql, userId: number, viewer: Viewer | null): Promise<{ user: UserRecord, devices: DeviceRecord[] }> {
  const { user, devices } = await reads.ofUser(sql, userId, readScope(viewer, false))
  if (user === undefined) throw errors.notFound('User', userId)
  return { user, devices }
}

const TOKEN_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
/** The firmware's token form: 6 lower-case alphanumerics (behaviour.md §5.7; clients.md §1.1), from a CSPRNG. */
export const newDeviceToken = (): string => Array.from({ length: 6 }, () => TOKEN_ALPHABET[randomInt(TOKEN_ALPHABET.length)]).join('')
/** 36^6 tokens: a clash is rare, ten in a row would mean the space is nearly full. */
const TOKEN_ATTEMPTS = 10

/**
 * Runs `write` with fresh tokens until one is not taken. A clash is retried here and never
 * reaches the caller, so no answer tells that another device holds a token. In a transaction,
 * `write` must run in a savepoint of its own, so that a clash leaves the transaction usable.
 */
export async function withFreshToken<T> (write: (token: string) => Promise<T>, make: () => string = newDeviceToken): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write(make())
    } catch (err) {
      const clash = isPgCode(err, PgCode.uniqueViolation) && (pgError(err)?.constraint_name ?? '').includes('device_token')
      if (!clash || attempt >= TOKEN_ATTEMPTS) throw err
    }
  }
}

function unprocessableIf (problems: Record<string, string[]>): void {
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
}

async function tagIds (db: Executor, names: string[]): Promise<number[]> {
  if (names.length === 0) return []
  const rows = await db.select({ id: tags.id, name: tags.name }).from(tags).where(inArray(tags.name, names))
  const unknown = names.filter((n) => !rows.some((r) => r.name === n))
  if (unknown.length > 0) throw errors.unprocessable({ user_tags: [`unknown tags: ${unknown.join(', ')} (see GET /v0/tags)`] })
  return rows.map((r) => r.id)
}

async function assertKit (db: Executor, kitId: number): Promise<void> {
  const [kit] = await db.select({ id: kits.id }).from(kits).where(eq(kits.id, kitId)).limit(1)
  if (kit === undefined) throw errors.unprocessable({ kit_id: ['does not exist (see GET /v0/kits)'] })
}

type Placement = Pick<DeviceRow, 'latitude' | 'longitude' | 'geohash' | 'city' | 'countryCode'>

/**
 * Location rules (contract: Location): coordinates truncated to 5 digits, or blurred to 3
 * accurate digits without precise_location, so that a precise position is never stored; then
 * geohash, city and country. Runs only when the coordinates or precise_location change.
 */
function place (current: Pick<DeviceRow, 'latitude' | 'longitude' | 'preciseLocation'> | null, input: DeviceInput, random: () => number): Partial<Placement> {
  const precise = input.preciseLocation ?? current?.preciseLocation ?? true
  const coordinatesSent = input.latitude !== undefined || input.longitude !== undefined
  const blurNow = current !== null && input.preciseLocation === false && current.preciseLocation
  if (!coordinatesSent && !blurNow) return {}
  const latitude = input.latitude !== undefined ? input.latitude : current?.latitude ?? null
  const longitude = input.longitude !== undefined ? input.longitude : current?.longitude ?? null
  if (latitude === null || longitude === null) {
    if (latitude !== longitude) throw errors.unprocessable({ [latitude === null ? 'latitude' : 'longitude']: ["can't be blank when the other coordinate is set"] })
    return { latitude: null, longitude: null, geohash: null, city: null, countryCode: null }
  }
  const lat = precise ? truncate5(latitude) : blur(latitude, random)
  const lng = precise ? truncate5(longitude) : blur(longitude, random)
  const at = reverseGeocode(lat, lng)
  return { latitude: Math.min(lat, 90), longitude: Math.min(lng, 180), geohash: geohashOf(lat, lng), city: at.city, countryCode: at.countryCode }
}

/**
 * MAC takeover (behaviour.md §5.3): the newest registration owns the physical device, so every
 * other device holding the MAC, archived ones too, moves it to old_mac_address.
 */
async function takeOverMac (tx: Executor, mac: string, exceptId: number, now: Date): Promise<void> {
  await tx.update(devices)
    .set({ oldMacAddress: mac, macAddress: null, updatedAt: now, state: sql`case when ${devices.state} = 'never_published' then 'not_configured' else ${devices.state} end` })
    .where(and(eq(devices.macAddress, mac), ne(devices.id, exceptId)))
}

async function writeTagsAndPostprocessing (tx: Executor, deviceId: number, input: DeviceInput, tagList: number[] | undefined, now: Date): Promise<void> {
  if (tagList !== undefined) {
    await tx.delete(deviceTags).where(eq(deviceTags.deviceId, deviceId))
    if (tagList.length > 0) await tx.insert(deviceTags).values(tagList.map((tagId) => ({ deviceId, tagId }))).onConflictDoNothing()
  }
  if (input.postprocessing !== undefined) {
    const p = input.postprocessing
    const values = {
      ...(p.blueprintUrl !== undefined ? { blueprintUrl: p.blueprintUrl } : {}),
      ...(p.hardwareUrl !== undefined ? { hardwareUrl: p.hardwareUrl } : {}),
      ...(p.forwardingParams !== undefined ? { forwardingParams: p.forwardingParams } : {}),
      ...(p.meta !== undefined ? { meta: p.meta } : {}),
      ...(p.latestPostprocessing !== undefined ? { latestPostprocessing: p.latestPostprocessing } : {})
    }
    await tx.insert(postprocessings).values({ deviceId, ...values })
      .onConflictDoUpdate({ target: postprocessings.deviceId, set: { ...values, updatedAt: now } })
  }
}

function columnsOf (input: DeviceInput) {
  return {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.macAddress !== undefined ? { macAddress: input.macAddress } : {}),
    ...(input.exposure !== undefined ? { exposure: input.exposure } : {}),
    ...(input.elevation !== undefined ? { elevation: input.elevation } : {}),
    ...(input.preciseLocation !== undefined ? { preciseLocation: input.preciseLocation } : {}),
    ...(input.isPrivate !== undefined ? { isPrivate: input.isPrivate } : {}),
    ...(input.enableForwarding !== undefined ? { enableForwarding: input.enableForwarding } : {}),
    ...(input.isTest !== undefined ? { isTest: input.isTest } : {}),
    ...(input.notifyLowBattery !== undefined ? { notifyLowBattery: input.notifyLowBattery } : {}),
    ...(input.notifyStoppedPublishing !== undefined ? { notifyStoppedPublishing: input.notifyStoppedPublishing } : {}),
    ...(input.kitId !== undefined ? { kitId: input.kitId } : {}),
    ...(input.hardwareNameOverride !== undefined ? { hardwareNameOverride: input.hardwareNameOverride } : {}),
    ...(input.hardwareTypeOverride !== undefined ? { hardwareTypeOverride: input.hardwareTypeOverride } : {}),
    ...(input.hardwareVersionOverride !== undefined ? { hardwareVersionOverride: input.hardwareVersionOverride } : {}),
    ...(input.hardwareSlugOverride !== undefined ? { hardwareSlugOverride: input.hardwareSlugOverride } : {}),
    ...(input.meta !== undefined ? { meta: input.meta } : {})
  }
}

/** POST /devices: every authenticated user may add devices and owns them; the platform issues its token. */
export async function createDevice (db: Db, body: unknown, viewer: Viewer | null, options: DeviceServiceOptions): Promise<DeviceRow> {
  if (viewer === null) throw errors.unauthorized()
  const { input, errors: problems } = parseDeviceBody(body, { creating: true, viewer })
  unprocessableIf(problems)
  const tagList = input.userTags === undefined ? undefined : await tagIds(db, input.userTags)
  if (input.kitId !== undefined) await assertKit(db, input.kitId)
  const kitId = input.kitId ?? (await db.select({ id: kits.id }).from(kits).where(eq(kits.id, defaultKitId)).limit(1))[0]?.id ?? null
  const placement = place(null, input, options.random ?? Math.random)
  const now = options.now
  return await db.transaction(async (tx) => {
    const row = await withFreshToken(async (deviceToken) => (await tx.transaction(async (sp) => await sp.insert(devices).values({
      ...columnsOf(input),
      ...placement,
      name: input.name ?? '',
      ownerId: viewer.id,
      kitId,
      deviceToken,
      state: input.macAddress === undefined || input.macAddress === null ? 'not_configured' : 'never_published',
      createdAt: now,
      updatedAt: now
    }).returning()))[0])
    if (row === undefined) throw errors.internal()
    if (input.macAddress !== undefined && input.macAddress !== null) await takeOverMac(tx, input.macAddress, row.id, now)
    await writeTagsAndPostprocessing(tx, row.id, input, tagList, now)
    // The kit's sensors are the device's components from the start, so data.sensors lists them before any reading.
    if (kitId !== null) {
      await tx.execute(sql`insert into ${components} (device_id, sensor_id) select ${row.id}, ${kitSensors.sensorId} from ${kitSensors} where ${kitSensors.kitId} = ${kitId} on conflict do nothing`)
    }
    return row
  })
}

/** PATCH /devices/:id: the owner or an admin; an empty body changes nothing and answers 200. */
export async function updateDevice (db: Db, device: DeviceRow, body: unknown, viewer: Viewer | null, options: DeviceServiceOptions): Promise<DeviceRow> {
  assertCanWrite(viewer, device)
  const { input, errors: problems } = parseDeviceBody(body, { creating: false, viewer })
  unprocessableIf(problems)
  const tagList = input.userTags === undefined ? undefined : await tagIds(db, input.userTags)
  if (input.kitId !== undefined) await assertKit(db, input.kitId)
  const placement = place(device, input, options.random ?? Math.random)
  const now = options.now
  const macAddress = input.macAddress !== undefined ? input.macAddress : device.macAddress
  return await db.transaction(async (tx) => {
    const [row] = await tx.update(devices).set({
      ...columnsOf(input),
      ...placement,
      state: stateFor({ ...device, macAddress }),
      updatedAt: now
    }).where(eq(devices.id, device.id)).returning()
    if (row === undefined) throw errors.notFound('Device', device.id)
    if (input.macAddress !== undefined && input.macAddress !== null && input.macAddress !== device.macAddress) await takeOverMac(tx, input.macAddress, row.id, now)
    await writeTagsAndPostprocessing(tx, row.id, input, tagList, now)
    return row
  })
}

/**
 * POST /devices/:id/device_token: the owner or an admin replaces the device's token with a new
 * one of the platform's making; the old one stops working at once (a kit still using it publishes
 * into nothing, and its publishes count as guesses, as any unknown token's).
 */
export async function regenerateDeviceToken (db: Executor, device: DeviceRow, viewer: Viewer | null, now: Date): Promise<DeviceRow> {
  assertCanWrite(viewer, device)
  const row = await withFreshToken(async (deviceToken) => (await db.update(devices).set({ deviceToken, updatedAt: now })
    .where(and(eq(devices.id, device.id), isNull(devices.archivedAt))).returning())[0])
  if (row === undefined) throw errors.notFound('Device', device.id)
  return row
}

/**
 * DELETE /devices/:id archives: hidden everywhere, MAC kept aside, restorable by an admin until
 * the exporter's purge removes the device and its readings after the grace period.
 */
export async function archiveDevice (db: Executor, device: DeviceRow, viewer: Viewer | null, now: Date): Promise<void> {
  assertCanWrite(viewer, device)
  await db.update(devices).set({ archivedAt: now, state: 'archived', oldMacAddress: device.macAddress, macAddress: null, updatedAt: now })
    .where(eq(devices.id, device.id))
}

/** Admins bring an archived device back during the grace period; its MAC returns unless another device took it. */
export async function restoreDevice (db: Db, id: string, viewer: Viewer | null, now: Date): Promise<DeviceRow> {
  if (viewer === null) throw errors.unauthorized()
  if (!isAdmin(viewer)) throw errors.forbidden()
  const deviceId = parseDeviceId(id)
  return await db.transaction(async (tx) => {
    const [device] = await tx.select().from(devices).where(eq(devices.id, deviceId)).for('update')
    if (device === undefined) throw errors.notFound('Device', deviceId)
    if (device.archivedAt === null) return device
    const mac = device.oldMacAddress
    const taken = mac === null ? false : (await tx.select({ id: devices.id }).from(devices).where(eq(devices.macAddress, mac)).limit(1)).length > 0
    const macAddress = mac !== null && !taken ? mac : null
    const [row] = await tx.update(devices).set({
      archivedAt: null,
      macAddress,
      state: stateFor({ ...device, macAddress, archivedAt: null }),
      updatedAt: now
    }).where(eq(devices.id, device.id)).returning()
    if (row === undefined) throw errors.notFound('Device', device.id)
    return row
  })
}
