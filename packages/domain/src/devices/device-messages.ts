import type { Sql } from '@esp/db'
import { freeJsonProblem } from '../validation/free-json.js'

/**
 * What devices say besides readings (behaviour.md §9.2, clients.md §1.3): `info` status messages,
 * `hello` handshakes and factory `inventory` reports. Payloads are checked here, before any SQL,
 * so that a database error always means the database failed and never that a device sent junk.
 * JSON goes as text cast to jsonb: drizzle owns the shared client's serializers (README design notes).
 */
export type MessageResult = 'stored' | 'unknown_device' | 'rejected'

/** The firmware's info object is a few hundred bytes; anything near this is not a device. */
export const MAX_STATUS_BYTES = 16 * 1024
export const MAX_INVENTORY_BYTES = 64 * 1024

/** A JSON object that jsonb can hold (no NUL, no lone surrogate, not nested too deeply), or null. */
export function parseJsonObject (payload: Buffer, maxBytes: number): Record<string, unknown> | null {
  if (payload.length > maxBytes) return null
  const text = payload.toString('utf8')
  if (text.includes('\u0000')) return null
  try {
    const value: unknown = JSON.parse(text)
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return null
    return freeJsonProblem(value) === null ? value as Record<string, unknown> : null
  } catch {
    return null
  }
}

/**
 * `info`: stored verbatim as `hardware.last_status_message`, replacing the previous one, with the
 * time it was received (values such as "not synced" and a missing rcause are kept as sent).
 */
export async function storeStatus (sql: Sql, token: string, payload: Buffer, now: Date): Promise<MessageResult> {
  const status = parseJsonObject(payload, MAX_STATUS_BYTES)
  if (status === null) return 'rejected'
  const rows = await sql`
    update devices set last_status_message = ${JSON.stringify(status)}::jsonb, last_status_at = ${now.toISOString()}::timestamptz
    where device_token = ${token} and archived_at is null returning id`
  return rows.length > 0 ? 'stored' : 'unknown_device'
}

/** `hello`: the device is alive and configured; a token with no device yet is accepted and ignored. */
export async function markSeen (sql: Sql, token: string, now: Date): Promise<MessageResult> {
  const rows = await sql`
    update devices set last_seen_at = greatest(last_seen_at, ${now.toISOString()}::timestamptz)
    where device_token = ${token} and archived_at is null returning id`
  return rows.length > 0 ? 'stored' : 'unknown_device'
}

/** Whether an active device has this token: the clustered broker's check before a device publishes. */
export async function isActiveDeviceToken (sql: Sql, token: string): Promise<boolean> {
  const rows = await sql`select 1 from devices where device_token = ${token} and archived_at is null`
  return rows.length > 0
}

/** `device/inventory`: the factory test report, kept as sent; its JSON form when it parses. */
export async function storeInventory (sql: Sql, payload: Buffer, now: Date): Promise<MessageResult> {
  if (payload.length > MAX_INVENTORY_BYTES) return 'rejected'
  const text = payload.toString('utf8').replaceAll('\u0000', '')
  const report = parseJsonObject(Buffer.from(text), MAX_INVENTORY_BYTES)
  await sql`
    insert into device_inventories (report, raw_payload, received_at)
    values (${report === null ? null : JSON.stringify(report)}::jsonb, ${text}, ${now.toISOString()}::timestamptz)`
  return 'stored'
}
