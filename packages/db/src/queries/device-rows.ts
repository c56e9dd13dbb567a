import { and, eq, inArray, isNull, ne, sql as drizzleSql } from 'drizzle-orm'
import { type Handle, inSavepoint } from '../client.js'
import { kits, kitSensors, tags } from '../schema/catalogue.js'
import { components, devices, deviceTags, postprocessings } from '../schema/devices.js'

/*
 * A device's row as writes and the reading paths need it (access by id, token or MAC), and the
 * statements that change it; the representation's reads are queries/devices.ts.
 */

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
