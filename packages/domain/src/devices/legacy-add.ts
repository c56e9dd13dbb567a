import { type Handle, legacyAddRow } from '@esp/db'
import { safeEqual } from '../auth/secrets.js'
import { ingestBatch, type IngestContext, type IngestOutcome } from '../readings/ingest.js'
import type { DeviceAccess } from './device-access.js'

/**
 * The kits whose firmware posts readings to the older `/add` (SCK 1.0 and 1.1; clients.md §1.5):
 * a device of one of them, and only such a device, takes readings by its MAC address. An owner
 * opts a device in by giving it one of these kits (kit_id 2 or 3).
 */
export const LEGACY_ADD_KIT_SLUGS: readonly string[] = ['sck:1,0', 'sck:1,1']

const MAC = /^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$/

/** `X-SmartCitizenMacADDR` as the database holds MACs (lower case, colons), or null when it is none. */
export function legacyMac (header: string | undefined): string | null {
  const mac = header?.trim().toLowerCase()
  return mac !== undefined && MAC.test(mac) ? mac.replace(/-/g, ':') : null
}

/**
 * The device `/add` may store into (issue 34), or null: an active device of a legacy kit with this
 * MAC address; a private one only when the request also carries its owner's `legacy_api_key` (the
 * firmware's `X-SmartCitizenApiKey`), never by its MAC alone. Null says nothing more: an unknown
 * MAC, another kind of device and a private one without its key are one and the same answer.
 */
export async function legacyAddDevice (h: Handle, macHeader: string | undefined, apiKey: string | undefined): Promise<DeviceAccess | null> {
  const mac = legacyMac(macHeader)
  if (mac === null) return null
  const row = await legacyAddRow(h, mac, LEGACY_ADD_KIT_SLUGS)
  if (row === undefined) return null
  if (row.is_private && (apiKey === undefined || row.legacy_api_key === null || !safeEqual(row.legacy_api_key, apiKey.trim()))) return null
  return { id: row.id, ownerId: row.owner_id, isPrivate: row.is_private, kitId: row.kit_id, forwardingToken: row.forwarding_token }
}

/**
 * `X-SmartCitizenData` (a JSON array of flat objects keyed by sensor keys, with a `timestamp`) in
 * the contract's shape; null when it is not such an array. An entry with no key besides its time
 * is left out, as the reference does.
 */
export function legacyReadings (header: string): Array<{ recorded_at: unknown, sensors: Array<{ id: string, value: unknown }> }> | null {
  let entries: unknown
  try { entries = JSON.parse(header) } catch { return null }
  if (!Array.isArray(entries)) return null
  return entries.map((entry: unknown) => {
    const record = typeof entry === 'object' && entry !== null ? entry as Record<string, unknown> : {}
    const { timestamp, ...values } = record
    return { recorded_at: typeof timestamp === 'string' ? timestamp.trim() : timestamp, sensors: Object.entries(values).map(([key, value]) => ({ id: key, value })) }
  }).filter((entry) => entry.sensors.length > 0)
}

/**
 * `/add`'s readings for a device legacyAddDevice found, through the one write path and its rules:
 * the time bounds of every path, keys no sensor has skipped and the rest stored, a malformed
 * entry refusing the whole header. The kit reads nothing but the clock, so what was not stored is
 * noted in the device's ingest status for its owner, as for MQTT; null when the header held nothing.
 */
export async function storeLegacyReadings (ctx: IngestContext, device: DeviceAccess, header: string): Promise<IngestOutcome | null> {
  const readings = legacyReadings(header)
  if (readings === null) {
    const problems = { 'X-SmartCitizenData': ['is not a JSON array of readings'] }
    ctx.status?.rejected(device.id, ctx.now(), 'unreadable', problems)
    return { status: 'rejected', reason: 'unreadable', problems }
  }
  if (readings.length === 0) return null
  const outcome = await ingestBatch(ctx, device, readings)
  if (outcome.status === 'rejected') ctx.status?.rejected(device.id, ctx.now(), outcome.reason, outcome.problems)
  else if (outcome.skipped.count > 0) ctx.status?.skipped(device.id, ctx.now(), outcome.skipped)
  return outcome
}
