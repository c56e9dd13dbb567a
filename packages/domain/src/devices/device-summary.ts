import { and, asc, eq, inArray, isNull, or } from 'drizzle-orm'
import { devices, type Executor } from '@esp/db'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { formatTimestamp } from '../time.js'
import { systemTags } from './device-state.js'

type DeviceRow = typeof devices.$inferSelect

const canSeeSecrets = (viewer: Viewer | null, device: DeviceRow): boolean => viewer?.id === device.ownerId || isAdmin(viewer)

/** The contract's device summary (element of a user's `devices`). */
export function presentDeviceSummary (device: DeviceRow, viewer: Viewer | null, now: Date) {
  return {
    id: device.id,
    uuid: device.uuid,
    mac_address: canSeeSecrets(viewer, device) ? device.macAddress : '[FILTERED]',
    name: device.name,
    description: device.description,
    latitude: device.latitude,
    longitude: device.longitude,
    kit_id: device.kitId,
    state: device.state,
    system_tags: systemTags(device, now),
    last_reading_at: formatTimestamp(device.lastReadingAt),
    added_at: formatTimestamp(device.createdAt),
    created_at: formatTimestamp(device.createdAt),
    updated_at: formatTimestamp(device.updatedAt)
  }
}

/** Active devices of several users in one query; private ones only for their owner and admins. */
export async function deviceSummariesByOwner (db: Executor, ownerIds: number[], viewer: Viewer | null, now: Date): Promise<Map<number, ReturnType<typeof presentDeviceSummary>[]>> {
  const result = new Map<number, ReturnType<typeof presentDeviceSummary>[]>(ownerIds.map((id) => [id, []]))
  if (ownerIds.length === 0) return result
  const visibility = isAdmin(viewer) ? undefined : or(eq(devices.isPrivate, false), eq(devices.ownerId, viewer?.id ?? -1))
  const rows = await db.select().from(devices)
    .where(and(inArray(devices.ownerId, ownerIds), isNull(devices.archivedAt), visibility))
    .orderBy(asc(devices.id))
  for (const row of rows) result.get(row.ownerId)?.push(presentDeviceSummary(row, viewer, now))
  return result
}
