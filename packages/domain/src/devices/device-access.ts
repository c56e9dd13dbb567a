import { and, eq, isNull } from 'drizzle-orm'
import { devices, type Executor } from '@esp/db'
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
