import { randomInt } from 'node:crypto'
import {
  addKitComponents, archiveDeviceRow, defaultKitId, type DeviceValues, type Handle, inTransaction, insertDevice, isPgCode, kitExists, listDeviceStamps, type DeviceListOptions,
  lockDeviceRow, macAddressTaken, PgCode, pgError, type PostprocessingValues, replaceDeviceTags, setDeviceToken, takeOverMac, tagsNamed, updateDeviceRow,
  upsertPostprocessing, type UserRecord
} from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { blur, geohashOf, reverseGeocode, truncate5 } from '../geo/location.js'
import type { ListQuery } from '../lists/filter-compiler.js'
import { type DeviceInput, parseDeviceBody } from './device-rules.js'
import { assertCanWrite, type DeviceRecord, type DeviceRow, parseDeviceId, readScope, reads, visibility } from './device-access.js'

/** Contract: Filtering (devices), older-form keys too; secrets and admin columns for admins only (the field map is packages/db's). */
export { deviceFilters } from '@esp/db'

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

export interface DeviceListParams { near?: string | undefined, within?: string | undefined, withTags?: string | undefined }

/**
 * The filters of a list beyond the plain page, checked: null for the plain list (no filter, sort,
 * near or tags: what dashboards poll), which one prepared statement walks by id.
 */
export function listQueryOptions (query: ListQuery, params: DeviceListParams): DeviceListOptions | null {
  const withTags = params.withTags?.split('|').map((t) => t.trim()).filter((t) => t !== '') ?? []
  if (query.filters.length === 0 && query.sort.length === 0 && params.near === undefined && withTags.length === 0) return null
  let near: { latitude: number, longitude: number, within: number } | undefined
  if (params.near !== undefined) {
    const match = NEAR.exec(params.near.trim())
    const lat = Number(match?.[1])
    const lng = Number(match?.[2])
    if (match === null || Math.abs(lat) > 90 || Math.abs(lng) > 180) {
      throw errors.badRequest('near must be "<latitude>,<longitude>", e.g. near=41.39,2.17', { near: ['must be "<latitude>,<longitude>"'] })
    }
    const within = params.within === undefined || params.within === '' ? 1000 : Number(params.within)
    if (!Number.isFinite(within) || within <= 0) throw errors.badRequest('within must be a positive number of kilometres', { within: ['must be a positive number of kilometres'] })
    near = { latitude: lat, longitude: lng, within }
  }
  return { withTags, near }
}

/**
 * A page of devices with everything their representation shows, and the total, read in full
 * (the routes send kept texts instead: representations.ts).
 */
export async function listDevices (h: Handle, query: ListQuery, params: DeviceListParams, viewer: Viewer | null): Promise<{ rows: DeviceRecord[], total: number }> {
  const scope = readScope(viewer, true)
  const options = listQueryOptions(query, params)
  if (options === null) return await reads.page(h, { limit: query.perPage, offset: (query.page - 1) * query.perPage }, scope)
  const { rows, total } = (await listDeviceStamps(h, query, options, visibility(viewer))).found
  return { rows: await reads.byIds(h, rows.map((r) => r.id), scope), total }
}

/** Active devices of several owners, as the caller may see them, without data (a user's `devices`). */
export async function devicesOfOwners (h: Handle, ownerIds: number[], viewer: Viewer | null): Promise<DeviceRecord[]> {
  return await reads.ofOwners(h, ownerIds, readScope(viewer, false))
}

/** GET /users/:id and /me: an active user by id and their devices, in one statement; 404 when there is none. */
export async function userWithDevices (h: Handle, userId: number, viewer: Viewer | null): Promise<{ user: UserRecord, devices: DeviceRecord[] }> {
  const { user, devices } = await reads.ofUser(h, userId, readScope(viewer, false))
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

async function tagIds (h: Handle, names: string[]): Promise<number[]> {
  if (names.length === 0) return []
  const rows = await tagsNamed(h, names)
  const unknown = names.filter((n) => !rows.some((r) => r.name === n))
  if (unknown.length > 0) throw errors.unprocessable({ user_tags: [`unknown tags: ${unknown.join(', ')} (see GET /v0/tags)`] })
  return rows.map((r) => r.id)
}

async function assertKit (h: Handle, kitId: number): Promise<void> {
  if (!await kitExists(h, kitId)) throw errors.unprocessable({ kit_id: ['does not exist (see GET /v0/kits)'] })
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

async function writeTagsAndPostprocessing (tx: Handle, deviceId: number, input: DeviceInput, tagList: number[] | undefined, now: Date): Promise<void> {
  if (tagList !== undefined) await replaceDeviceTags(tx, deviceId, tagList)
  if (input.postprocessing !== undefined) {
    const p = input.postprocessing
    const values: PostprocessingValues = {
      ...(p.blueprintUrl !== undefined ? { blueprintUrl: p.blueprintUrl } : {}),
      ...(p.hardwareUrl !== undefined ? { hardwareUrl: p.hardwareUrl } : {}),
      ...(p.forwardingParams !== undefined ? { forwardingParams: p.forwardingParams } : {}),
      ...(p.meta !== undefined ? { meta: p.meta } : {}),
      ...(p.latestPostprocessing !== undefined ? { latestPostprocessing: p.latestPostprocessing } : {})
    }
    await upsertPostprocessing(tx, deviceId, values, now)
  }
}

function columnsOf (input: DeviceInput): DeviceValues {
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
export async function createDevice (h: Handle, body: unknown, viewer: Viewer | null, options: DeviceServiceOptions): Promise<DeviceRow> {
  if (viewer === null) throw errors.unauthorized()
  const { input, errors: problems } = parseDeviceBody(body, { creating: true, viewer })
  unprocessableIf(problems)
  const tagList = input.userTags === undefined ? undefined : await tagIds(h, input.userTags)
  if (input.kitId !== undefined) await assertKit(h, input.kitId)
  const kitId = input.kitId ?? (await kitExists(h, defaultKitId) ? defaultKitId : null)
  const placement = place(null, input, options.random ?? Math.random)
  const now = options.now
  return await inTransaction(h, async (tx) => {
    // insertDevice runs in a savepoint of its own: a token clash leaves the transaction usable.
    const row = await withFreshToken(async (deviceToken) => await insertDevice(tx, {
      ...columnsOf(input),
      ...placement,
      name: input.name ?? '',
      ownerId: viewer.id,
      kitId,
      deviceToken,
      state: input.macAddress === undefined || input.macAddress === null ? 'not_configured' : 'never_published',
      createdAt: now,
      updatedAt: now
    }))
    if (row === undefined) throw errors.internal()
    if (input.macAddress !== undefined && input.macAddress !== null) await takeOverMac(tx, input.macAddress, row.id, now)
    await writeTagsAndPostprocessing(tx, row.id, input, tagList, now)
    // The kit's sensors are the device's components from the start, so data.sensors lists them before any reading.
    if (kitId !== null) await addKitComponents(tx, row.id, kitId)
    return row
  })
}

/** PATCH /devices/:id: the owner or an admin; an empty body changes nothing and answers 200. */
export async function updateDevice (h: Handle, device: DeviceRow, body: unknown, viewer: Viewer | null, options: DeviceServiceOptions): Promise<DeviceRow> {
  assertCanWrite(viewer, device)
  const { input, errors: problems } = parseDeviceBody(body, { creating: false, viewer })
  unprocessableIf(problems)
  const tagList = input.userTags === undefined ? undefined : await tagIds(h, input.userTags)
  if (input.kitId !== undefined) await assertKit(h, input.kitId)
  const placement = place(device, input, options.random ?? Math.random)
  const now = options.now
  const macAddress = input.macAddress !== undefined ? input.macAddress : device.macAddress
  return await inTransaction(h, async (tx) => {
    const row = await updateDeviceRow(tx, device.id, {
      ...columnsOf(input),
      ...placement,
      state: stateFor({ ...device, macAddress }),
      updatedAt: now
    })
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
export async function regenerateDeviceToken (h: Handle, device: DeviceRow, viewer: Viewer | null, now: Date): Promise<DeviceRow> {
  assertCanWrite(viewer, device)
  const row = await withFreshToken(async (deviceToken) => await setDeviceToken(h, device.id, deviceToken, now))
  if (row === undefined) throw errors.notFound('Device', device.id)
  return row
}

/**
 * DELETE /devices/:id archives: hidden everywhere, MAC kept aside, restorable by an admin until
 * the exporter's purge removes the device and its readings after the grace period.
 */
export async function archiveDevice (h: Handle, device: DeviceRow, viewer: Viewer | null, now: Date): Promise<void> {
  assertCanWrite(viewer, device)
  await archiveDeviceRow(h, device.id, device.macAddress, now)
}

/** Admins bring an archived device back during the grace period; its MAC returns unless another device took it. */
export async function restoreDevice (h: Handle, id: string, viewer: Viewer | null, now: Date): Promise<DeviceRow> {
  if (viewer === null) throw errors.unauthorized()
  if (!isAdmin(viewer)) throw errors.forbidden()
  const deviceId = parseDeviceId(id)
  return await inTransaction(h, async (tx) => {
    const device = await lockDeviceRow(tx, deviceId)
    if (device === undefined) throw errors.notFound('Device', deviceId)
    if (device.archivedAt === null) return device
    const mac = device.oldMacAddress
    const taken = mac === null ? false : await macAddressTaken(tx, mac)
    const macAddress = mac !== null && !taken ? mac : null
    const row = await updateDeviceRow(tx, device.id, {
      archivedAt: null,
      macAddress,
      state: stateFor({ ...device, macAddress, archivedAt: null }),
      updatedAt: now
    })
    if (row === undefined) throw errors.notFound('Device', device.id)
    return row
  })
}
