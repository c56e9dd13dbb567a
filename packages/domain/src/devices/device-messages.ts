import { deviceTokenIsActive, type Handle, insertDeviceInventory, type IngestStatusDelta, markDeviceSeen, MAX_UNKNOWN_SENSORS, mergeIngestStatus, setDeviceStatusMessage } from '@esp/db'
import type { FieldErrors } from '../errors.js'
import type { RejectionReason } from '../readings/batch.js'
import type { Skipped } from '../readings/skipped.js'
import { freeJsonProblem } from '../validation/free-json.js'

/**
 * What devices say besides readings (behaviour.md §9.2, clients.md §1.3): `info` status messages,
 * `hello` handshakes and factory `inventory` reports. Payloads are checked here, before any SQL,
 * so that a database error always means the database failed and never that a device sent junk.
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
export async function storeStatus (h: Handle, token: string, payload: Buffer, now: Date): Promise<MessageResult> {
  const status = parseJsonObject(payload, MAX_STATUS_BYTES)
  if (status === null) return 'rejected'
  return await setDeviceStatusMessage(h, token, JSON.stringify(status), now) ? 'stored' : 'unknown_device'
}

/** `hello`: the device is alive and configured; a token with no device yet is accepted and ignored. */
export async function markSeen (h: Handle, token: string, now: Date): Promise<MessageResult> {
  return await markDeviceSeen(h, token, now) ? 'stored' : 'unknown_device'
}

/** Whether an active device has this token: the clustered broker's check before a device publishes. */
export async function isActiveDeviceToken (h: Handle, token: string): Promise<boolean> {
  return await deviceTokenIsActive(h, token)
}

/** `device/inventory`: the factory test report, kept as sent; its JSON form when it parses. */
export async function storeInventory (h: Handle, payload: Buffer, now: Date): Promise<MessageResult> {
  if (payload.length > MAX_INVENTORY_BYTES) return 'rejected'
  const text = payload.toString('utf8').replaceAll('\u0000', '')
  const report = parseJsonObject(Buffer.from(text), MAX_INVENTORY_BYTES)
  await insertDeviceInventory(h, report === null ? null : JSON.stringify(report), text, now)
  return 'stored'
}

/** How much of a refused message's problems its device's status keeps. */
const KEPT_PROBLEMS = 10
const KEPT_MESSAGES = 3
const KEPT_CHARS = 200

/** The first problems of a refused message, shortened: a status never grows with what a device sends. */
export function keptProblems (problems: FieldErrors): FieldErrors {
  const kept: FieldErrors = {}
  let n = 0
  for (const path in problems) {
    if (n++ >= KEPT_PROBLEMS) break
    kept[path.slice(0, KEPT_CHARS)] = (problems[path] ?? []).slice(0, KEPT_MESSAGES).map((message) => message.slice(0, KEPT_CHARS))
  }
  return kept
}

export interface IngestStatusLogOptions {
  /** how long notes wait before they are merged: a device's status is written at most this often */
  intervalMs?: number
  /** devices with notes waiting; notes about further devices are dropped (and counted) until the next merge */
  maxDevices?: number
  /** a merge that failed (its notes are kept for the next one) */
  onError?: (err: unknown) => void
}

/**
 * What the ingest did not store, noted for each device's owner (issue 35; `ingest` in the device's
 * representation): values of unknown sensors skipped, messages refused whole and the last
 * refusal with its problems. Notes are merged in memory and written by one statement for every
 * device at most every `intervalMs` (mergeIngestStatus), so a device that sends a bad message
 * every second costs a write every few seconds, not one per message. `flush` writes at once
 * (shutdown, tests).
 */
export class IngestStatusLog {
  private pending = new Map<number, IngestStatusDelta>()
  private timer: NodeJS.Timeout | undefined
  private flushing: Promise<void> = Promise.resolve()
  private readonly intervalMs: number
  private readonly maxDevices: number
  /** notes dropped because maxDevices devices were waiting */
  dropped = 0

  constructor (private readonly database: Handle, private readonly options: IngestStatusLogOptions = {}) {
    this.intervalMs = options.intervalMs ?? 5000
    this.maxDevices = options.maxDevices ?? 100_000
  }

  /** Values of `deviceId` left out because their sensors are unknown (buildRows' Skipped). */
  skipped (deviceId: number, at: Date, skipped: Pick<Skipped, 'count' | 'sensors'>): void {
    const delta = this.delta(deviceId, at)
    if (delta === undefined) return
    delta.skippedValues += skipped.count
    // The latest first, each once, at most MAX_UNKNOWN_SENSORS.
    const latest = [...skipped.sensors].reverse()
    delta.unknownSensors = [...latest, ...delta.unknownSensors.filter((ref) => !skipped.sensors.has(ref))].slice(0, MAX_UNKNOWN_SENSORS)
  }

  /** A message of `deviceId` refused whole: nothing of it was stored. */
  rejected (deviceId: number, at: Date, reason: RejectionReason, problems: FieldErrors): void {
    const delta = this.delta(deviceId, at)
    if (delta === undefined) return
    delta.rejectedMessages++
    delta.lastRejection = { at: at.toISOString(), reason, problems: keptProblems(problems) }
  }

  /** Writes every note now, after any merge under way. */
  async flush (): Promise<void> {
    clearTimeout(this.timer)
    this.timer = undefined
    const run = this.flushing.then(async () => { await this.merge() })
    this.flushing = run
    await run
  }

  private delta (deviceId: number, at: Date): IngestStatusDelta | undefined {
    let delta = this.pending.get(deviceId)
    if (delta === undefined) {
      if (this.pending.size >= this.maxDevices) { this.dropped++; return undefined }
      delta = { deviceId, at, unknownSensors: [], skippedValues: 0, rejectedMessages: 0, lastRejection: null }
      this.pending.set(deviceId, delta)
      if (this.timer === undefined) {
        this.timer = setTimeout(() => { void this.flush() }, this.intervalMs)
        // Notes never keep a process alive; shutdown flushes them.
        this.timer.unref()
      }
    } else if (at > delta.at) {
      delta.at = at
    }
    return delta
  }

  private async merge (): Promise<void> {
    if (this.pending.size === 0) return
    const deltas = [...this.pending.values()]
    this.pending = new Map()
    try {
      await mergeIngestStatus(this.database, deltas)
    } catch (err) {
      // Kept for the next merge, folded into whatever was noted meanwhile.
      for (const delta of deltas) this.restore(delta)
      this.options.onError?.(err)
    }
  }

  private restore (old: IngestStatusDelta): void {
    const delta = this.delta(old.deviceId, old.at)
    if (delta === undefined) return
    delta.skippedValues += old.skippedValues
    delta.rejectedMessages += old.rejectedMessages
    delta.unknownSensors = [...delta.unknownSensors, ...old.unknownSensors.filter((ref) => !delta.unknownSensors.includes(ref))].slice(0, MAX_UNKNOWN_SENSORS)
    if (delta.lastRejection === null || (old.lastRejection !== null && old.lastRejection.at > delta.lastRejection.at)) delta.lastRejection = old.lastRejection
  }
}
