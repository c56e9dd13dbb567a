import type { FastifyBaseLogger } from 'fastify'
import type { Handle } from '@esp/db'
import type { DatabaseHealth } from '@esp/http'
import { markSeen, MAX_BODY_DEPTH, type MessageIngest, type MessageResult, nestedDeeperThan, REJECTION_REASONS, type RejectionReason, storeInventory, storeStatus } from '@esp/domain'
import { parseRawPayload, RawPayloadError } from './raw-payload.js'
import type { DeviceTopic } from './topics.js'

/** Counters of the MQTT side, read by the metrics endpoint and the tests. */
export interface MqttStats {
  /** device messages received */
  messages: number
  /** readings newly stored from them */
  readings: number
  duplicates: number
  /** messages that could not be read or stored (bad payloads); acknowledged, since sending them again cannot help */
  rejected: number
  /** readings messages of known devices refused whole, by reason (part of `rejected`) */
  rejectedBy: Record<RejectionReason, number>
  /** values of stored readings messages left out because their sensor is unknown */
  skippedValues: number
  /** messages under a token no active device has */
  unknownDevice: number
  /** messages not acknowledged because the database failed; the device sends them again */
  failed: number
  /** clients connected to the embedded broker */
  connections: number
}

export const newStats = (): MqttStats => ({
  messages: 0,
  readings: 0,
  duplicates: 0,
  rejected: 0,
  rejectedBy: Object.fromEntries(REJECTION_REASONS.map((reason) => [reason, 0])) as Record<RejectionReason, number>,
  skippedValues: 0,
  unknownDevice: 0,
  failed: 0,
  connections: 0
})

export interface DeviceMessageDeps {
  database: Handle
  ingest: MessageIngest
  now: () => Date
  log: FastifyBaseLogger
  stats: MqttStats
  /** JSON readings payloads larger than this are refused (raw ones are bounded by the firmware) */
  maxPayloadBytes: number
  /** the process's view of its database (DatabaseHealth in @esp/http), where the server has one */
  health?: Pick<DatabaseHealth, 'available' | 'reason' | 'note'> | undefined
}

type Parsed = { data: unknown } | { empty: true } | { error: string, reason: RejectionReason }

function readingsData (topic: DeviceTopic, payload: Buffer, maxPayloadBytes: number): Parsed {
  if (topic.kind === 'raw') {
    try {
      const raw = parseRawPayload(payload)
      if (raw.sensors.length === 0) return { empty: true }
      if (raw.recordedAt === null) return { error: 'no timestamp given (t:YYYY-MM-DDTHH:MM:SSZ)', reason: 'invalid' }
      return { data: [{ recorded_at: raw.recordedAt, sensors: raw.sensors }] }
    } catch (err) {
      if (err instanceof RawPayloadError) return { error: err.message, reason: 'unreadable' }
      throw err
    }
  }
  if (payload.length > maxPayloadBytes) return { error: `the payload is over ${maxPayloadBytes} bytes`, reason: 'unreadable' }
  if (nestedDeeperThan(payload, MAX_BODY_DEPTH)) return { error: `the payload is nested more than ${MAX_BODY_DEPTH} levels deep`, reason: 'unreadable' }
  let body: unknown
  try {
    body = JSON.parse(payload.toString('utf8'))
  } catch {
    return { error: 'the payload is not JSON', reason: 'unreadable' }
  }
  const data = typeof body === 'object' && body !== null ? (body as { data?: unknown }).data : undefined
  // The reference stores nothing for a missing or empty data array, and says nothing either.
  if (data === undefined || data === null || (Array.isArray(data) && data.length === 0)) return { empty: true }
  return { data }
}

/**
 * One device message, from the embedded broker or an external one (behaviour.md §9.2): readings
 * go through the one write path; info, hello and inventory are stored. Resolves once whatever
 * the message carries is committed, or once it is known that nothing can be stored (unknown
 * token, unreadable payload: counted and logged at debug, never thrown). Rejects only when the
 * database fails, so the caller withholds the acknowledgement. Resolves to `unknown_device` when
 * the topic's token names no active device (the embedded broker counts it as a guess).
 *
 * Readings the firmware sends are never lost without a word (issue 35; clients.md rule 40: at
 * QoS 0 every message accepted must be kept): an unreadable or invalid one goes to the batcher
 * too, which finds its device and notes the refusal in the device's ingest status; values of
 * unknown sensors are skipped and the rest stored. Both are counted (metrics.ts). The path:
 * MessageIngest (a batch of a few ms), then domain storeMessages, then @esp/db ReadingsWriter (group commit).
 */
export async function handleDeviceMessage (deps: DeviceMessageDeps, topic: DeviceTopic, payload: Buffer): Promise<'unknown_device' | undefined> {
  const { stats, log, health } = deps
  stats.messages++
  // While the database is known to be away nothing is tried: the message is refused at once (no
  // PUBACK), rather than each one waiting on a connection attempt.
  if (health !== undefined && !health.available) {
    stats.failed++
    throw new Error(health.reason ?? 'the database is unavailable')
  }
  let result: MessageResult
  try {
    if (topic.kind === 'inventory') result = await storeInventory(deps.database, payload, deps.now())
    else if (topic.kind === 'info') result = await storeStatus(deps.database, topic.token, payload, deps.now())
    else if (topic.kind === 'hello') result = await markSeen(deps.database, topic.token, deps.now())
    else {
      const parsed = readingsData(topic, payload, deps.maxPayloadBytes)
      if ('empty' in parsed) return
      const outcome = await deps.ingest.submit('error' in parsed
        ? { token: topic.token, data: undefined, refused: { reason: parsed.reason, message: parsed.error } }
        : { token: topic.token, data: parsed.data })
      if (outcome.status === 'stored') {
        stats.readings += outcome.result.stored
        stats.duplicates += outcome.result.duplicates
        stats.skippedValues += outcome.skipped.count
        return
      }
      if (outcome.status === 'rejected') {
        stats.rejected++
        stats.rejectedBy[outcome.reason]++
        log.debug({ topic: topic.kind, reason: outcome.reason, errors: outcome.problems }, 'mqtt readings rejected')
        return
      }
      result = outcome.status
    }
  } catch (err) {
    stats.failed++
    health?.note(err)
    throw err
  }
  if (result === 'rejected') {
    stats.rejected++
    log.debug({ topic: topic.kind }, 'mqtt message rejected')
  } else if (result === 'unknown_device') {
    stats.unknownDevice++
    log.debug({ topic: topic.kind }, 'mqtt message for an unknown device token')
    return 'unknown_device'
  }
}
