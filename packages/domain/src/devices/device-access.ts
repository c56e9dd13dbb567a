import {
  activeDeviceRow, type ComponentRecord, deviceAccessById, type DeviceAccessRow, deviceAccessByTokens, type DeviceReadRow, type DeviceRow, type Handle, type KitRow,
  type LatestRecord, readDevice, readDevicePage, readDevices, readDevicesOfOwners, type ReadScope, readUserWithDevices, type SensorRow, type UserRecord,
  type Visibility
} from '@esp/db'
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

export type { DeviceRow }

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

/** The rule's inputs for this viewer, and whether sensors and values are read: what the device read statements take. */
export const readScope = (viewer: Viewer | null, withData: boolean): ReadScope => ({ ...visibility(viewer), withData })

/** A device's sensor: the reference data's row and representation, and the device's latest values. */
export interface DeviceSensor { sensor: SensorRow, view: SensorView, latest: LatestRecord | null }

/** A device with every relation its representation shows, the reference data's included. */
export type DeviceRecord = Omit<DeviceReadRow, 'components'> & { kit: KitRow | null, sensors: DeviceSensor[] | null }

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
async function withReferences (h: Handle, rows: DeviceReadRow[]): Promise<DeviceRecord[]> {
  if (rows.length === 0) return []
  // One statement, one snapshot: every row carries the same generation.
  const catalogue = await referenceData(h).atLeast(rows[0]?.stamp.generation ?? 0)
  return rows.map(({ components, ...row }) => ({
    ...row,
    kit: row.kitId === null ? null : catalogue.kits.get(row.kitId) ?? null,
    sensors: components === null ? null : sensorsOf(components, catalogue)
  }))
}

/** The read statements of devices (packages/db queries/devices.ts), and what they read made whole. */
export const reads = {
  byId: async (h: Handle, id: number, scope: ReadScope): Promise<DeviceRecord | undefined> => {
    const row = await readDevice(h, id, scope)
    return row === undefined ? undefined : (await withReferences(h, [row]))[0]
  },
  byIds: async (h: Handle, ids: number[], scope: ReadScope): Promise<DeviceRecord[]> => await withReferences(h, await readDevices(h, ids, scope)),
  ofOwners: async (h: Handle, ownerIds: number[], scope: ReadScope): Promise<DeviceRecord[]> => await withReferences(h, await readDevicesOfOwners(h, ownerIds, scope)),
  ofUser: async (h: Handle, userId: number, scope: ReadScope): Promise<{ user: UserRecord | undefined, devices: DeviceRecord[] }> => {
    const { user, rows } = await readUserWithDevices(h, userId, scope)
    return { user, devices: await withReferences(h, rows) }
  },
  page: async (h: Handle, page: { limit: number, offset: number }, scope: ReadScope): Promise<{ rows: DeviceRecord[], total: number }> => {
    const { rows, total } = await readDevicePage(h, page, scope)
    return { rows: await withReferences(h, rows), total }
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
export async function loadDevice (h: Handle, raw: string | number, viewer: Viewer | null, withData = true): Promise<DeviceRecord> {
  const id = parseDeviceId(raw)
  const device = await reads.byId(h, id, readScope(viewer, withData))
  if (device === undefined) throw errors.notFound('Device', id)
  assertCanSee(viewer, device)
  return device
}

/** The full row of an active device the viewer may see, for a write (which checks write itself). */
export async function loadDeviceRow (h: Handle, raw: string | number, viewer: Viewer | null): Promise<DeviceRow> {
  const id = parseDeviceId(raw)
  const row = await activeDeviceRow(h, id)
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

const asAccess = (row: DeviceAccessRow): DeviceAccess =>
  ({ id: row.id, ownerId: row.owner_id, isPrivate: row.is_private, kitId: row.kit_id, forwardingToken: row.forwarding_token })

/** Who may see or write an active device, for the reading paths; no access check of its own. */
export async function findDeviceAccess (h: Handle, id: string | number): Promise<DeviceAccess> {
  const deviceId = parseDeviceId(id)
  const row = await deviceAccessById(h, deviceId)
  if (row === undefined) throw errors.notFound('Device', deviceId)
  return asAccess(row)
}

/** Active devices by their MQTT token (matched exactly, as the firmware sends it; behaviour.md §9.2). */
export async function findDevicesByToken (h: Handle, tokens: string[]): Promise<Map<string, DeviceAccess>> {
  const rows = await deviceAccessByTokens(h, tokens)
  return new Map(rows.flatMap((row) => row.device_token === null ? [] : [[row.device_token, asAccess(row)] as const]))
}
