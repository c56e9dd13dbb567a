import { and, eq, isNull, or, type SQL } from 'drizzle-orm'
import { type Visibility, type ComponentRecord, type DeviceReadRow, deviceReads, devices, type Executor, type KitRow, type LatestRecord, type ReadScope, type SensorRow, type Sql, type UserRecord } from '@esp/db'
import { type Catalogue, referenceData, type SensorView } from '../catalogue/reference-data.js'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { recordIdOr404 } from '../validation/record-id.js'

/*
 * The one way to find a device and check access: parse the id (`parseDeviceId`), load it
 * (`loadDevice` for its representation, `loadDeviceRow` for a write, `findDeviceAccess` on the
 * reading paths), then check see, manage or write (`assertCanSee`, `canManage`, `assertCanWrite`).
 * Archived devices are hidden everywhere: they answer like missing ones.
 */

export type DeviceRow = typeof devices.$inferSelect

/** A device id as a path gives it; 404 when it cannot name a device. */
export const parseDeviceId = (raw: string | number): number => recordIdOr404('Device', raw)

/** The owner and admins see a device's secrets and settings, and may change it (contract: Authentication). */
export const canManage = (viewer: Viewer | null, device: Pick<DeviceRow, 'ownerId'>): boolean => viewer !== null && (viewer.id === device.ownerId || isAdmin(viewer))

/*
 * The one home of the privacy rule (contract: a private device is hidden from other users). To
 * anyone but its owner and admins a private device does not exist: every device route answers what
 * it answers for an id that names no device (404, the same body), because a 403 would confirm it.
 */

/** The privacy rule's inputs for this viewer (the rule's SQL is packages/db queries/visibility.ts). */
export const visibility = (viewer: Viewer | null): Visibility => ({ viewerId: viewer?.id ?? null, admin: isAdmin(viewer) })

/** The rule as a SQL condition, for lists, maps, profiles and experiments; undefined for admins. */
export function visibleTo (viewer: Viewer | null): SQL | undefined {
  if (isAdmin(viewer)) return undefined
  return viewer === null ? eq(devices.isPrivate, false) : or(eq(devices.isPrivate, false), eq(devices.ownerId, viewer.id))
}

type SqlFragment = ReturnType<Sql>

/**
 * The rule as a condition of a postgres.js statement over a devices row aliased `d` (search, and
 * other hand-written SQL that does not go through Drizzle).
 */
export function visibleToSql (sql: Sql, viewer: Viewer | null): SqlFragment {
  if (isAdmin(viewer)) return sql`true`
  return viewer === null ? sql`not d.is_private` : sql`(not d.is_private or d.owner_id = ${viewer.id})`
}

/**
 * The rule as SQL text over a devices row of `alias`, with the viewer's id in $2 and whether they
 * are an admin in $3: the form of the prepared read statements (packages/db queries/devices.ts),
 * whose text must not change with the viewer. The parameters sit in subqueries so that a plan made
 * for one viewer costs what the generic plan costs (see queries/devices.ts).
 */
const visibleToText = (alias: string): string => `(not ${alias}.is_private or ${alias}.owner_id = (select $2::int4) or (select $3::bool))`

/** The parameters of visibleToText for this viewer, and whether sensors and values are read. */
export const readScope = (viewer: Viewer | null, withData: boolean): ReadScope => ({ viewerId: viewer?.id ?? null, admin: isAdmin(viewer), withData })

/** A device's sensor: the reference data's row and representation, and the device's latest values. */
export interface DeviceSensor { sensor: SensorRow, view: SensorView, latest: LatestRecord | null }

/** A device with every relation its representation shows, the reference data's included. */
export type DeviceRecord = Omit<DeviceReadRow, 'components' | 'catalogueGeneration'> & { kit: KitRow | null, sensors: DeviceSensor[] | null }

/** A device's sensors in the order of their names, then ids. */
function sensorsOf (components: ComponentRecord[], catalogue: Catalogue): DeviceSensor[] {
  const sensors: Array<DeviceSensor & { rank: number }> = []
  for (const { sensorId, latest } of components) {
    const sensor = catalogue.sensors.get(sensorId)
    const view = catalogue.sensorView(sensorId)
    if (sensor !== undefined && view !== undefined) sensors.push({ sensor, view, latest, rank: catalogue.rankOf(sensorId) })
  }
  return sensors.sort((a, b) => a.rank - b.rank)
}

/**
 * The rows of a read statement with their reference data, of the generation the statement's own
 * snapshot saw or a later one (reference-data.ts): no older than any write that returned.
 */
async function withReferences (sql: Sql, rows: DeviceReadRow[]): Promise<DeviceRecord[]> {
  if (rows.length === 0) return []
  // One statement, one snapshot: every row carries the same generation.
  const catalogue = await referenceData(sql).atLeast(rows[0]?.catalogueGeneration ?? 0)
  return rows.map(({ components, catalogueGeneration: _seen, ...row }) => ({
    ...row,
    kit: row.kitId === null ? null : catalogue.kits.get(row.kitId) ?? null,
    sensors: components === null ? null : sensorsOf(components, catalogue)
  }))
}

/** The read statements of devices, made once with the rule, and what they read made whole. */
const statements = deviceReads(visibleToText)
export const reads = {
  byId: async (sql: Sql, id: number, scope: ReadScope): Promise<DeviceRecord | undefined> => {
    const row = await statements.byId(sql, id, scope)
    return row === undefined ? undefined : (await withReferences(sql, [row]))[0]
  },
  byIds: async (sql: Sql, ids: number[], scope: ReadScope): Promise<DeviceRecord[]> => await withReferences(sql, await statements.byIds(sql, ids, scope)),
  ofOwners: async (sql: Sql, ownerIds: number[], scope: ReadScope): Promise<DeviceRecord[]> => await withReferences(sql, await statements.ofOwners(sql, ownerIds, scope)),
  ofUser: async (sql: Sql, userId: number, scope: ReadScope): Promise<{ user: UserRecord | undefined, devices: DeviceRecord[] }> => {
    const { user, rows } = await statements.ofUser(sql, userId, scope)
    return { user, devices: await withReferences(sql, rows) }
  },
  page: async (sql: Sql, page: { limit: number, offset: number }, scope: ReadScope): Promise<{ rows: DeviceRecord[], total: number }> => {
    const { rows, total } = await statements.page(sql, page, scope)
    return { rows: await withReferences(sql, rows), total }
  }
}

/** The rule for one device already loaded. */
export const canSee = (viewer: Viewer | null, device: Pick<DeviceRow, 'ownerId' | 'isPrivate'>): boolean => !device.isPrivate || canManage(viewer, device)

/** Every route that names one device: a private device of someone else is a 404 like a missing one. */
export function assertCanSee (viewer: Viewer | null, device: Pick<DeviceRow, 'id' | 'ownerId' | 'isPrivate'>): void {
  if (!canSee(viewer, device)) throw errors.notFound('Device', device.id)
}

/**
 * Changing a device, posting its readings, its CSV archive and imports: the owner or an admin. A
 * private device stays hidden first, so anonymous callers get the 404 of a missing device, not a 401.
 */
export function assertCanWrite (viewer: Viewer | null, device: Pick<DeviceRow, 'id' | 'ownerId' | 'isPrivate'>): asserts viewer is Viewer {
  assertCanSee(viewer, device)
  if (viewer === null) throw errors.unauthorized()
  if (!canManage(viewer, device)) throw errors.forbidden()
}

/**
 * GET /devices/:id: the device with everything its representation shows, in one statement, if the
 * viewer may see it; else the 404 of a missing device.
 */
export async function loadDevice (sql: Sql, raw: string | number, viewer: Viewer | null, withData = true): Promise<DeviceRecord> {
  const id = parseDeviceId(raw)
  const device = await reads.byId(sql, id, readScope(viewer, withData))
  if (device === undefined) throw errors.notFound('Device', id)
  assertCanSee(viewer, device)
  return device
}

/** The full row of an active device the viewer may see, for a write (which checks write itself). */
export async function loadDeviceRow (db: Executor, raw: string | number, viewer: Viewer | null): Promise<DeviceRow> {
  const id = parseDeviceId(raw)
  const [row] = await db.select().from(devices).where(and(eq(devices.id, id), isNull(devices.archivedAt))).limit(1)
  if (row === undefined) throw errors.notFound('Device', id)
  assertCanSee(viewer, row)
  return row
}

export interface DeviceAccess {
  id: number
  ownerId: number
  isPrivate: boolean
  kitId: number | null
  /** the owner's forwarding token when the device forwards its readings (behaviour.md §9.4) */
  forwardingToken: string | null
}

interface AccessRow { id: number, owner_id: number, is_private: boolean, kit_id: number | null, forwarding_token: string | null, device_token: string | null }

const asAccess = (row: AccessRow): DeviceAccess =>
  ({ id: row.id, ownerId: row.owner_id, isPrivate: row.is_private, kitId: row.kit_id, forwardingToken: row.forwarding_token })

/**
 * What the reading paths need of active devices (who may see or write them, their kit, where their
 * readings are forwarded), in one prepared query: these are the hot paths, so they skip the full
 * row and the query builder. Exactly one of the keys is given.
 */
async function accessRows (sql: Sql, by: { id: number } | { tokens: string[] }): Promise<AccessRow[]> {
  const where = 'id' in by ? sql`d.id = ${by.id}` : sql`d.device_token = any(${by.tokens}::text[])`
  return await sql<AccessRow[]>`
    select d.id, d.owner_id, d.is_private, d.kit_id, d.device_token,
      case when d.enable_forwarding then u.forwarding_token end as forwarding_token
    from devices d join users u on u.id = d.owner_id
    where d.archived_at is null and ${where}`
}

/** Who may see or write an active device, for the reading paths; no access check of its own. */
export async function findDeviceAccess (sql: Sql, id: string | number): Promise<DeviceAccess> {
  const deviceId = parseDeviceId(id)
  const [row] = await accessRows(sql, { id: deviceId })
  if (row === undefined) throw errors.notFound('Device', deviceId)
  return asAccess(row)
}

/** Active devices by their MQTT token (matched exactly, as the firmware sends it; behaviour.md §9.2). */
export async function findDevicesByToken (sql: Sql, tokens: string[]): Promise<Map<string, DeviceAccess>> {
  const rows = tokens.length === 0 ? [] : await accessRows(sql, { tokens })
  return new Map(rows.flatMap((row) => row.device_token === null ? [] : [[row.device_token, asAccess(row)] as const]))
}
