import type { ReadingRow } from '@esp/db'
import { type DeviceAccess, findDevicesByToken } from '../devices/device-access.js'
import type { FieldErrors } from '../errors.js'
import { countValues, parseBatch, type ParsedBatch, type PostedValue, type RejectionReason } from './batch.js'
import { checkBatch, type IngestContext, resolveSensors } from './ingest.js'

/**
 * One device message: the token it came under and the contract's `data` array, or, for a payload
 * its topic's reader could not read, why (`refused`): it is refused here too, once its token names
 * a device, so that the device's owner hears of it.
 */
export interface DeviceMessage {
  token: string
  data: unknown
  refused?: { reason: RejectionReason, message: string } | undefined
}

export type MessageOutcome =
  | { status: 'stored', device: DeviceAccess, stored: number, duplicates: number, skipped: number }
  | { status: 'unknown_device' }
  | { status: 'rejected', reason: RejectionReason, problems: FieldErrors }

export interface MessageIngestOptions {
  /** messages one batch may carry */
  maxMessages?: number
  /** how long the first message of a batch waits for others */
  maxDelayMs?: number
}

interface Pending {
  message: DeviceMessage
  resolve: (outcome: MessageOutcome) => void
  reject: (error: unknown) => void
}

/**
 * Device messages (MQTT) in short batches, bounded by count and by a few milliseconds, so that
 * acknowledging each message only after its commit does not cost a round trip per message: a
 * batch resolves its tokens in one query, its sensors in another, and shares one transaction
 * through the writer. Validation is per message, as for a posted batch: one bad message is
 * rejected whole and never fails its neighbours; values of unknown sensors are skipped and the
 * rest stored. Both are noted in the device's ingest status (ctx.status). A submit rejects only
 * when the database fails, so the caller can withhold the acknowledgement and the device sends again.
 */
export class MessageIngest {
  private queue: Pending[] = []
  private timer: NodeJS.Timeout | undefined
  private readonly running = new Set<Promise<void>>()
  private storing = 0
  private readonly maxMessages: number
  private readonly maxDelayMs: number

  constructor (private readonly ctx: IngestContext, options: MessageIngestOptions = {}) {
    this.maxMessages = options.maxMessages ?? 500
    this.maxDelayMs = options.maxDelayMs ?? 3
  }

  async submit (message: DeviceMessage): Promise<MessageOutcome> {
    return await new Promise<MessageOutcome>((resolve, reject) => {
      this.queue.push({ message, resolve, reject })
      if (this.queue.length >= this.maxMessages) this.flush()
      else this.timer ??= setTimeout(() => { this.flush() }, this.maxDelayMs)
    })
  }

  /**
   * Messages taken but not yet committed. The brokers read no further from a connection while its
   * messages are pending (Aedes parses a client's next socket read only when the last one is
   * handled; the external subscriber takes one message per connection at a time), so this stays
   * bounded by the connections, not by how fast devices send.
   */
  get pending (): number {
    return this.queue.length + this.storing
  }

  /**
   * Sends what is queued now and waits for every batch in flight, then writes the devices'
   * ingest status noted so far (graceful shutdown).
   */
  async drain (): Promise<void> {
    this.flush()
    await Promise.allSettled([...this.running])
    await this.ctx.status?.flush()
  }

  private flush (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.queue.length === 0) return
    const batch = this.queue
    this.queue = []
    this.storing += batch.length
    const run = this.store(batch).catch((err: unknown) => { for (const pending of batch) pending.reject(err) })
    this.running.add(run)
    void run.finally(() => {
      this.running.delete(run)
      this.storing -= batch.length
    })
  }

  private async store (batch: Pending[]): Promise<void> {
    const { ctx } = this
    const devices = await findDevicesByToken(ctx.database.sql, [...new Set(batch.map((p) => p.message.token))])
    const now = ctx.now()
    const none: PostedValue[] = []
    const parsed = batch.map((pending): { pending: Pending, device: DeviceAccess | undefined, batch: ParsedBatch } => {
      const { token, data, refused } = pending.message
      const device = devices.get(token)
      if (device === undefined) return { pending, device, batch: { values: none, problems: {}, reason: null } }
      if (refused !== undefined) return { pending, device, batch: { values: none, problems: { payload: [refused.message] }, reason: refused.reason } }
      if (countValues(data) > ctx.limits.maxValues) {
        return { pending, device, batch: { values: none, problems: { data: [`may carry at most ${ctx.limits.maxValues} values`] }, reason: 'too_many_values' } }
      }
      return { pending, device, batch: parseBatch(data, ctx.limits, now) }
    })
    const allValues: PostedValue[] = parsed.flatMap((p) => p.batch.values)
    const sensors = await resolveSensors(ctx.database.sql, [...devices.values()], allValues)

    const accepted: { pending: Pending, device: DeviceAccess, rows: ReadingRow[], skipped: number }[] = []
    for (const { pending, device, batch: message } of parsed) {
      if (device === undefined) { pending.resolve({ status: 'unknown_device' }); continue }
      const checked = checkBatch(device.id, message, sensors.get(device.id) ?? new Map())
      if (checked.status === 'rejected') {
        // Acknowledged (sending it again cannot help), so its owner is told instead (issue 35).
        ctx.status?.rejected(device.id, now, checked.reason, checked.problems)
        pending.resolve(checked)
        continue
      }
      if (checked.skipped.count > 0) ctx.status?.skipped(device.id, now, checked.skipped)
      accepted.push({ pending, device, rows: checked.rows, skipped: checked.skipped.count })
    }
    const results = await ctx.writer.writeAll(accepted.map((a) => a.rows))
    accepted.forEach(({ pending, device, skipped }, i) => {
      const result = results[i] ?? { stored: 0, duplicates: 0, inserted: [] }
      if (result.inserted.length > 0) ctx.onStored?.({ device, inserted: result.inserted })
      pending.resolve({ status: 'stored', device, stored: result.stored, duplicates: result.duplicates, skipped })
    })
  }
}
