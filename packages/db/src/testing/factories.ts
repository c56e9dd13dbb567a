import { randomInt } from 'node:crypto'
import type { Handle } from '../client.js'
import type { DeviceState } from '../schema/devices.js'
import type { UserRole } from '../schema/users.js'
import { loadEngine, pgArrayLiteral, postgresRunner } from '../timeseries/index.js'

/**
 * Rows for tests, written straight to the tables (no API, no password hash, no events): each test
 * makes its own owner and devices on the database of its file, so tests never share rows and no
 * table is truncated. Defaults are unique within a process; every column a test cares about is an
 * override. Through the API (`signUp` of @esp/test-helpers/api) when the test needs a password or
 * a token the API issued.
 */

let made = 0
const next = (): number => ++made
// Device tokens are the firmware's six hex digits; a random start keeps two processes apart.
const tokenBase = 0x100000 + randomInt(0, 0x700000)

export interface UserFields {
  username?: string
  email?: string
  role?: UserRole
  /** an argon2 hash (hashPassword of @esp/domain); null: the user cannot sign in with a password */
  passwordHash?: string | null
  forwardingUsername?: string | null
  forwardingToken?: string | null
}

export interface MadeUser { id: number, username: string, email: string, role: UserRole }

/** A user row; unique username and e-mail unless given. */
export async function makeUser (handle: Pick<Handle, 'sql'>, fields: UserFields = {}): Promise<MadeUser> {
  const n = next()
  const username = fields.username ?? `maker${process.pid}x${n}`
  const email = fields.email ?? `${username}@example.org`
  const role = fields.role ?? 'citizen'
  const [row] = await handle.sql<{ id: number }[]>`
    insert into users (username, email, role, password_hash, forwarding_username, forwarding_token)
    values (${username}, ${email}, ${role}, ${fields.passwordHash ?? null}, ${fields.forwardingUsername ?? null}, ${fields.forwardingToken ?? null})
    returning id`
  if (row === undefined) throw new Error('makeUser: no row')
  return { id: row.id, username, email, role }
}

export interface DeviceFields {
  ownerId: number
  name?: string
  isPrivate?: boolean
  kitId?: number | null
  mac?: string | null
  /** the firmware's token; a fresh six-hex-digit one unless given, none for null */
  token?: string | null
  /** by default as the API leaves a new device: never_published with a MAC address, else not_configured */
  state?: DeviceState
  archivedAt?: Date | null
  enableForwarding?: boolean
}

export interface MadeDevice {
  id: number
  ownerId: number
  name: string
  token: string | null
  mac: string | null
  kitId: number | null
  isPrivate: boolean
  state: DeviceState
}

/** A device row of `ownerId`, with its token. */
export async function makeDevice (handle: Pick<Handle, 'sql'>, fields: DeviceFields): Promise<MadeDevice> {
  const n = next()
  const name = fields.name ?? `device ${n}`
  const token = fields.token === undefined ? (tokenBase + n).toString(16) : fields.token
  const mac = fields.mac ?? null
  const kitId = fields.kitId ?? null
  const isPrivate = fields.isPrivate ?? false
  const state = fields.state ?? (mac === null ? 'not_configured' : 'never_published')
  const [row] = await handle.sql<{ id: number }[]>`
    insert into devices (owner_id, name, is_private, kit_id, mac_address, device_token, state, archived_at, enable_forwarding)
    values (${fields.ownerId}, ${name}, ${isPrivate}, ${kitId}, ${mac}, ${token}, ${state}, ${fields.archivedAt?.toISOString() ?? null}::timestamptz, ${fields.enableForwarding ?? false})
    returning id`
  if (row === undefined) throw new Error('makeDevice: no row')
  return { id: row.id, ownerId: fields.ownerId, name, token, mac, kitId, isPrivate, state }
}

/** One raw reading: when, the stored value, and the posted number (the value unless given). */
export interface ReadingFields { at: Date | string | number, value: number | null, raw?: number | null }

/**
 * Raw readings of one sensor of a device, in one statement (the partitions of their months are
 * made first; arrays go as literals, the driver fetches no array types). Only the raw rows: no rollup tier, latest value or last_reading_at is touched, so
 * tests of those post readings through the API or the writer instead. Returns how many were new.
 */
export async function makeReadings (handle: Pick<Handle, 'sql'>, deviceId: number, sensorId: number, rows: readonly ReadingFields[]): Promise<number> {
  if (rows.length === 0) return 0
  const times = rows.map(({ at }) => new Date(at))
  const runner = postgresRunner(handle.sql)
  await (await loadEngine(runner)).prepare(runner, times)
  const inserted = await handle.sql`
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select ${deviceId}, ${sensorId}, t, v, r
    from unnest(${pgArrayLiteral(times)}::timestamptz[], ${pgArrayLiteral(rows.map((r) => r.value))}::float8[],
      ${pgArrayLiteral(rows.map((r) => r.raw === undefined ? r.value : r.raw))}::float8[]) as x(t, v, r)
    on conflict do nothing`
  return inserted.count
}

/**
 * Gives a user a role, as only an admin could; researchers and admins get a forwarding login
 * (`fu-<id>`, `ft-<id>`), citizens none.
 */
export async function setUserRole ({ sql }: Pick<Handle, 'sql'>, userId: number, role: UserRole): Promise<void> {
  const privileged = role !== 'citizen'
  await sql`update users set role = ${role}, forwarding_token = ${privileged ? `ft-${userId}` : null}, forwarding_username = ${privileged ? `fu-${userId}` : null} where id = ${userId}`
}
