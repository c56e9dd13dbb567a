import { and, eq, isNull } from 'drizzle-orm'
import { devices, type Executor, type Sql } from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'

export type DeviceRow = typeof devices.$inferSelect

/** An active (not archived) device, or 404: archived devices are hidden everywhere. */
export async function findActiveDevice (db: Executor, id: string | number): Promise<DeviceRow> {
  const numeric = typeof id === 'number' ? id : /^\d{1,9}$/.test(id) ? Number(id) : null
  if (numeric === null) throw errors.notFound('Device', String(id))
  const [row] = await db.select().from(devices).where(and(eq(devices.id, numeric), isNull(devices.archivedAt))).limit(1)
  if (row === undefined) throw errors.notFound('Device', numeric)
  return row
}

export const ownsOrAdmin = (viewer: Viewer | null, device: Pick<DeviceRow, 'ownerId'>): boolean => viewer !== null && (viewer.id === device.ownerId || isAdmin(viewer))

/** Posting readings and the CSV archive: the owner or an admin (contract: Authentication). */
export function assertCanWrite (viewer: Viewer | null, device: Pick<DeviceRow, 'ownerId'>): void {
  if (viewer === null) throw errors.unauthorized()
  if (!ownsOrAdmin(viewer, device)) throw errors.forbidden()
}

/** A private device is visible to its owner and admins only; others get 403, as clients expect (clients.md §4.16). */
export function assertCanSee (viewer: Viewer | null, device: Pick<DeviceRow, 'ownerId' | 'isPrivate'>): void {
  if (device.isPrivate && !ownsOrAdmin(viewer, device)) throw errors.forbidden()
}

export interface DeviceAccess { id: number, ownerId: number, isPrivate: boolean, kitId: number | null }

/**
 * What the reading routes need of a device (who may see or write it, its kit), in one prepared
 * query: these routes are the hot paths, so they skip the full row and the query builder.
 */
export async function findDeviceAccess (sql: Sql, id: string): Promise<DeviceAccess> {
  if (!/^\d{1,9}$/.test(id)) throw errors.notFound('Device', id)
  const [row] = await sql<{ id: number, owner_id: number, is_private: boolean, kit_id: number | null }[]>`
    select id, owner_id, is_private, kit_id from devices where id = ${Number(id)} and archived_at is null`
  if (row === undefined) throw errors.notFound('Device', Number(id))
  return { id: row.id, ownerId: row.owner_id, isPrivate: row.is_private, kitId: row.kit_id }
}
