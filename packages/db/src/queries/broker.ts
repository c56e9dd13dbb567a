import type { Handle } from '../client.js'
import type { UserRole } from '../schema/index.js'

// What devices say besides readings (domain devices/device-messages.ts) and the MQTT broker's
// checks (services/ingest broker/access.ts, cluster-auth.ts). JSON goes as text cast to jsonb:
// drizzle owns the shared client's serializers.

/** `info`: the device's last status message, replacing the previous one; false when no active device has the token. */
export async function setDeviceStatusMessage (h: Handle, token: string, statusJson: string, at: Date): Promise<boolean> {
  const rows = await h.sql`
    update devices set last_status_message = ${statusJson}::jsonb, last_status_at = ${at.toISOString()}::timestamptz
    where device_token = ${token} and archived_at is null returning id`
  return rows.length > 0
}

/** `hello`: the device was seen; false when no active device has the token. */
export async function markDeviceSeen (h: Handle, token: string, at: Date): Promise<boolean> {
  const rows = await h.sql`
    update devices set last_seen_at = greatest(last_seen_at, ${at.toISOString()}::timestamptz)
    where device_token = ${token} and archived_at is null returning id`
  return rows.length > 0
}

/** Whether an active device has this token. */
export async function deviceTokenIsActive (h: Handle, token: string): Promise<boolean> {
  const rows = await h.sql`select 1 from devices where device_token = ${token} and archived_at is null`
  return rows.length > 0
}

/** `device/inventory`: a factory test report, its text as sent and its JSON form (or null). */
export async function insertDeviceInventory (h: Handle, reportJson: string | null, rawPayload: string, at: Date): Promise<void> {
  await h.sql`
    insert into device_inventories (report, raw_payload, received_at)
    values (${reportJson}::jsonb, ${rawPayload}, ${at.toISOString()}::timestamptz)`
}

export interface ForwardingUserRow { id: number, username: string, role: UserRole, forwarding_token: string | null }

/** The active user with this forwarding username, or undefined. */
export async function findForwardingUser (h: Handle, forwardingUsername: string): Promise<ForwardingUserRow | undefined> {
  const [user] = await h.sql<ForwardingUserRow[]>`
    select id, username, role, forwarding_token from users
    where forwarding_username = ${forwardingUsername} and archived_at is null`
  return user
}

/** An active device's owner and privacy (who may subscribe to its live readings), or undefined. */
export async function findDevicePrivacy (h: Handle, deviceId: number): Promise<{ owner_id: number, is_private: boolean } | undefined> {
  const [device] = await h.sql<{ owner_id: number, is_private: boolean }[]>`
    select owner_id, is_private from devices where id = ${deviceId} and archived_at is null`
  return device
}
