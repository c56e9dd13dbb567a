import { createHash } from 'node:crypto'
import fastJson from 'fast-json-stringify'
import {
  deviceStamps, devicePageStamps, type DeviceStampRow, type Handle, listDeviceStamps, poolOf, type RevisionStamp, type Stamped, type UserStamp, type UserStampRequest, userStamps
} from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { errors } from '../errors.js'
import { Barrier } from '../generations.js'
import type { ListQuery } from '../lists/filter-compiler.js'
import { canSeePrivateFields, type UserRow, presentUser } from '../users/user-presenter.js'
import { User } from '../users/user-schemas.js'
import { findUser } from '../users/user-service.js'
import { recordId } from '../validation/record-id.js'
import { assertCanSee, canManage, type DeviceRecord, parseDeviceId, readScope, reads, visibility } from './device-access.js'
import { Device } from './device-schemas.js'
import { type DeviceListParams, listQueryOptions } from './device-service.js'
import { stateChangesAt } from './device-state.js'
import { presentDevice } from './device-view.js'

/*
 * Representations kept whole (DESIGN.md, Read). A device's representation is serialized once per
 * viewer class and kept by the revisions it was made from (migration 0009 bumps them in every
 * writing transaction); a read runs one cheap statement for the revisions, after the request
 * arrived, and sends the kept bytes when they match. On a miss the one read statement runs, and
 * its answer is presented, serialized and kept under the revisions that statement saw.
 *
 * A representation depends on the viewer only through its class: whoever manages the device (its
 * owner, admins) sees its secrets and every device of the owner; anyone else sees `[FILTERED]` and
 * the owner's public devices. The base URL (pictures) is part of the key, and the clock bounds
 * each kept text: online/offline and `new` change with time alone (`stateChangesAt`).
 */

/**
 * JSON made once and sent as these bytes: encoded once, and tagged once by their digest (the
 * entity tag the cache hook would make of them), good until `expiresAt` (epoch ms) by the clock.
 * Answers joined from kept parts are tagged by the parts' digests instead of hashing what they join.
 */
export interface KeptBody { readonly body: Buffer, readonly digest: string, readonly expiresAt: number }

/** A body of JSON text, made once. */
export function keptBody (json: string, expiresAt = Infinity): KeptBody {
  const body = Buffer.from(json)
  return { body, digest: createHash('sha1').update(body).digest('base64url'), expiresAt }
}

interface Entry { kept: KeptBody, stamp: string, size: number, used: boolean }

/** What a kept body costs beyond its bytes: the key, the stamp, the entry, the map's slot. */
const ENTRY_OVERHEAD = 300

/**
 * The kept bodies of one process, bounded by their size: at most `maxBytes` of bodies and their
 * bookkeeping. One entry per key: a new revision replaces the old. Eviction goes oldest first and
 * spares once an entry read since it was last passed (a second chance): a hit only sets a flag,
 * where moving the entry to the end of the map cost two map operations on every read.
 */
export class RepresentationCache {
  private readonly entries = new Map<string, Entry>()
  private bytes = 0

  constructor (readonly maxBytes: number) {}

  get size (): number { return this.entries.size }
  get usedBytes (): number { return this.bytes }

  /** The body kept under this key if it was made from these revisions and the clock has not passed its bound. */
  get (key: string, stamp: string, now: number): KeptBody | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined || entry.stamp !== stamp || now >= entry.kept.expiresAt) return undefined
    entry.used = true
    return entry.kept
  }

  /** Keeps a body under a key and stamp (replacing what the key held), evicting past the bound. */
  set (key: string, stamp: string, kept: KeptBody): KeptBody {
    const size = kept.body.length + (key.length + stamp.length) * 2 + ENTRY_OVERHEAD
    this.delete(key)
    // One body larger than a sixteenth of the bound would evict many others for one reader.
    if (size > this.maxBytes / 16) return kept
    this.entries.set(key, { kept, stamp, size, used: false })
    this.bytes += size
    while (this.bytes > this.maxBytes) {
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry]
      this.entries.delete(oldest)
      if (entry.used && oldest !== key) {
        entry.used = false
        this.entries.set(oldest, entry)
      } else {
        this.bytes -= entry.size
      }
    }
    return kept
  }

  private delete (key: string): void {
    const old = this.entries.get(key)
    if (old === undefined) return
    this.entries.delete(key)
    this.bytes -= old.size
  }
}

/**
 * Bodies joined as they are between `open` and `close`, comma-separated, tagged by their digests
 * and `salt`, which stands for what `open` and `close` add; good until the first part expires.
 */
function joinBodies (open: Buffer, parts: KeptBody[], close: Buffer, salt: string): KeptBody {
  const chunks: Buffer[] = [open]
  const digest = createHash('sha1').update(salt)
  let expiresAt = Infinity
  parts.forEach((part, i) => {
    if (i > 0) chunks.push(COMMA)
    chunks.push(part.body)
    digest.update(part.digest)
    if (part.expiresAt < expiresAt) expiresAt = part.expiresAt
  })
  chunks.push(close)
  return { body: Buffer.concat(chunks), digest: digest.digest('base64url'), expiresAt }
}

const COMMA = Buffer.from(',')
const OPEN = Buffer.from('[')
const CLOSE = Buffer.from(']')
const USER_CLOSE = Buffer.from(']}')

/**
 * The Device and User schemas' serializers: the ones Fastify compiles for their routes (the same
 * schemas, the same fast-json-stringify, no options), so a kept text is byte for byte what the
 * route would have sent. A user's `devices` items are Device representations, joined in as kept.
 */
// TypeBox's optional fields and fast-json-stringify's types disagree under exactOptionalPropertyTypes.
const serializeDevice = fastJson(Device as fastJson.Schema)
const serializeUser = fastJson(User as unknown as fastJson.Schema, { schema: { Device: Device as fastJson.Schema } })

/** Who reads, and what the representations they get depend on besides the data. */
export interface ReadingCaller {
  cache: RepresentationCache
  viewer: Viewer | null
  /**
   * The auth generation `viewer` was remembered under, when its token was not checked against the
   * current one yet (http's `credentialCheck`): the read's statement reads the current one, and
   * the read stops with CredentialsToConfirm before it uses the viewer when they differ.
   */
  credentialsGeneration?: number | undefined
  /** the origin that links (pictures) are made with */
  baseUrl: string
  now: Date
}

/**
 * The viewer's token was remembered under another auth generation than the read's statement saw
 * (or the statement saw none): it must be checked in full, then the read made again.
 */
export class CredentialsToConfirm extends Error {
  constructor () { super('the credentials must be checked against the current generation') }
}

/** The stamp statement's answer, once the remembered credentials are known to hold (ReadingCaller). */
function confirmed<T> (caller: ReadingCaller, { found, authGeneration }: Stamped<T>): T {
  if (caller.credentialsGeneration !== undefined && caller.credentialsGeneration !== authGeneration) throw new CredentialsToConfirm()
  return found
}

/**
 * The cheap statements of the reads, batched per pool: requests that arrive while one is in flight
 * share the next (sent after each of them arrived), so under load the stamps of many requests
 * cost one statement, as the generations do.
 */
interface StampBarriers {
  devices: Barrier<number, Stamped<Map<number, DeviceStampRow>>>
  users: Barrier<UserStampRequest, Stamped<Map<string, UserStamp | undefined>>>
}

const stampBarriersOfPools = new WeakMap<object, StampBarriers>()
const userRequestKey = (r: UserStampRequest): string => `${r.userId} ${r.viewer.viewerId ?? ''} ${String(r.viewer.admin)}`

function stampBarriers (h: Handle): StampBarriers {
  const pool = poolOf(h)
  let barriers = stampBarriersOfPools.get(pool)
  if (barriers === undefined) {
    barriers = {
      devices: new Barrier(async (ids) => await deviceStamps(h, [...new Set(ids)])),
      users: new Barrier(async (requests) => {
        const unique = [...new Map(requests.map((r) => [userRequestKey(r), r])).values()]
        const { found, authGeneration } = await userStamps(h, unique)
        return { found: new Map(unique.map((r, i) => [userRequestKey(r), found[i]])), authGeneration }
      })
    }
    stampBarriersOfPools.set(pool, barriers)
  }
  return barriers
}

const stampKey = (s: RevisionStamp): string => `${s.revision}.${s.ownerRevision}.${s.statusRevision}.${s.generation}`
const classOf = (caller: ReadingCaller, device: { ownerId: number }): string => canManage(caller.viewer, device) ? 'm' : 'p'
const deviceKey = (caller: ReadingCaller, device: { id: number, ownerId: number }, withData: boolean): string =>
  `d ${device.id} ${classOf(caller, device)}${withData ? 'd' : 's'} ${caller.baseUrl}`
/** The stamps of several devices as one, with the class each is shown in: a joined answer's stamp. */
const stampsKey = (caller: ReadingCaller, stamps: DeviceStampRow[]): string =>
  stamps.map((s) => `${s.id}${classOf(caller, s)}${stampKey(s.stamp)}`).join(',')

/**
 * An answer joined from kept parts (a page, a user with devices), itself kept whole under the
 * parts' stamps: a read that finds it sends it as it is, without joining or hashing anything.
 */
async function keptJoin (caller: ReadingCaller, key: string, stamp: string, join: () => Promise<KeptBody>): Promise<KeptBody> {
  return caller.cache.get(key, stamp, caller.now.getTime()) ?? caller.cache.set(key, stamp, await join())
}

/** Presents, serializes and keeps a device read in full, under the revisions its statement saw. */
function keepDevice (caller: ReadingCaller, record: DeviceRecord, withData: boolean): KeptBody {
  const json = serializeDevice(presentDevice(record, { viewer: caller.viewer, baseUrl: caller.baseUrl, now: caller.now }))
  return caller.cache.set(deviceKey(caller, record, withData), stampKey(record.stamp), keptBody(json, stateChangesAt(record, caller.now)))
}

/**
 * The texts of these devices (stamped by a cheap statement, already filtered by the privacy rule),
 * in their order: kept ones as they are, the rest read in one statement. A device gone in between
 * is left out, as the statement leaves it out.
 */
async function deviceBodies (h: Handle, caller: ReadingCaller, stamps: DeviceStampRow[], withData: boolean): Promise<KeptBody[]> {
  const now = caller.now.getTime()
  const texts = stamps.map((s) => caller.cache.get(deviceKey(caller, s, withData), stampKey(s.stamp), now))
  const missing = stamps.filter((_, i) => texts[i] === undefined).map((s) => s.id)
  if (missing.length > 0) {
    const records = new Map((await reads.byIds(h, missing, readScope(caller.viewer, withData))).map((r) => [r.id, r]))
    stamps.forEach((s, i) => {
      const record = texts[i] === undefined ? records.get(s.id) : undefined
      if (record !== undefined) texts[i] = keepDevice(caller, record, withData)
    })
  }
  return texts.filter((t) => t !== undefined)
}

/** GET /devices/:id: the device's text if the caller may see it, else the 404 of a missing device. */
export async function deviceBody (h: Handle, raw: string | number, caller: ReadingCaller): Promise<KeptBody> {
  const id = parseDeviceId(raw)
  const batch = await stampBarriers(h).devices.after(id)
  const stamped = confirmed(caller, { found: batch.found.get(id), authGeneration: batch.authGeneration })
  if (stamped === undefined) throw errors.notFound('Device', id)
  assertCanSee(caller.viewer, stamped)
  const kept = caller.cache.get(deviceKey(caller, stamped, true), stampKey(stamped.stamp), caller.now.getTime())
  if (kept !== undefined) return kept
  const record = await reads.byId(h, id, readScope(caller.viewer, true))
  if (record === undefined) throw errors.notFound('Device', id)
  assertCanSee(caller.viewer, record)
  return keepDevice(caller, record, true)
}

/** GET /devices: a page of the devices the caller may see as one JSON array's text, and the total. */
export async function deviceListBody (h: Handle, query: ListQuery, params: DeviceListParams, caller: ReadingCaller): Promise<{ kept: KeptBody, total: number }> {
  const options = listQueryOptions(query, params)
  const v = visibility(caller.viewer)
  const { rows, total } = confirmed(caller, options === null
    ? await devicePageStamps(h, { limit: query.perPage, offset: (query.page - 1) * query.perPage }, v)
    : await listDeviceStamps(h, query, options, v))
  const key = `l ${JSON.stringify(query)} ${JSON.stringify(params)} ${caller.baseUrl}`
  const kept = await keptJoin(caller, key, `${total}:${stampsKey(caller, rows)}`, async () => joinBodies(OPEN, await deviceBodies(h, caller, rows, true), CLOSE, String(total)))
  return { kept, total }
}

const USER_DEVICES_TAIL = '"devices":[]}'
const userKey = (caller: ReadingCaller, userId: number): string =>
  `u ${userId} ${caller.viewer?.id === userId ? 's' : canSeePrivateFields(caller.viewer, userId) ? 'a' : 'p'} ${caller.baseUrl}`

/** A user's body without the devices, which are the key's last: `…,"devices":[]}`. */
function keepUser (caller: ReadingCaller, row: UserRow): KeptBody {
  const json = serializeUser(presentUser(row, { viewer: caller.viewer, baseUrl: caller.baseUrl, devices: [] }))
  if (!json.endsWith(USER_DEVICES_TAIL)) throw new Error('a user\'s representation must end with its devices')
  return caller.cache.set(userKey(caller, row.id), String(row.revision), keptBody(json))
}

/**
 * GET /users/:id_or_username and /me: the user with the devices the caller may see (without data),
 * each part kept by its revisions.
 */
export async function userBody (h: Handle, key: string | number, caller: ReadingCaller): Promise<KeptBody> {
  const id = recordId(key)
  // A username is looked up first: remembered credentials are confirmed before any answer.
  if (id === null && caller.credentialsGeneration !== undefined) throw new CredentialsToConfirm()
  return await userBodyById(h, id ?? (await findUser(h, key)).id, caller)
}

async function userBodyById (h: Handle, id: number, caller: ReadingCaller): Promise<KeptBody> {
  const request = { userId: id, viewer: visibility(caller.viewer) }
  const batch = await stampBarriers(h).users.after(request)
  const stamped = confirmed(caller, { found: batch.found.get(userRequestKey(request)), authGeneration: batch.authGeneration })
  if (stamped === undefined) throw errors.notFound('User', id)
  const key = userKey(caller, id)
  return await keptJoin(caller, `U${key}`, `${stamped.revision}:${stampsKey(caller, stamped.devices)}`, async () => {
    const [devices, kept] = await Promise.all([
      deviceBodies(h, caller, stamped.devices, false),
      caller.cache.get(key, String(stamped.revision), caller.now.getTime()) ?? findUser(h, id).then((row) => keepUser(caller, row))
    ])
    // The user's body without its closing `]}`, then the devices as kept.
    return joinBodies(kept.body.subarray(0, -2), devices, USER_CLOSE, kept.digest)
  })
}
