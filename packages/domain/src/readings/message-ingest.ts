import type { ReadingRow } from '@esp/db'
import { type DeviceAccess, findDevicesByToken } from '../devices/device-access.js'
import type { FieldErrors } from '../errors.js'
import { countValues, parseBatch, type PostedValue } from './batch.js'
import { buildRows, type IngestContext, resolveSensors } from './ingest.js'

/** One device message: the token it came under and the contract's `data` array. */
export interface DeviceMessage {
  token: string
  data: unknown
}

export type MessageOutcome =
  | { status: 'stored', device: DeviceAccess, stored: number, duplicates: number }
  | { status: 'unknown_device' }
  | { status: 'rejected', problems: FieldErrors }

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
 * rejected whole and never fails its neighbours. A submit rejects only when the database fails,
 * so the caller can withhold the acknowledgement and the device sends again.
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

  /** Sends what is queued now and waits for every batch in flight (graceful shutdown). */
  async drain (): Promise<void> {
    this.flush()
    await Promise.allSettled([...this.running])
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
    const parsed = batch.map((pending) => {
      const device = devices.get(pending.message.token)
      if (device === undefined) return { pending, device, values: [], problems: {} }
      if (countValues(pending.message.data) > ctx.limits.maxValues) {
        return { pending, device, values: [], problems: { data: [`may carry at most ${ctx.limits.maxValues} values`] } }
      }
      return { pending, device, ...parseBatch(pending.message.data, ctx.limits, now) }
    })
    const allValues: PostedValue[] = parsed.flatMap((p) => p.values)
    const sensors = await resolveSensors(ctx.database.sql, [...devices.values()], allValues)

    const accepted: { pending: Pending, device: DeviceAccess, rows: ReadingRow[] }[] = []
    for (const { pending, device, values, problems } of parsed) {
      if (device === undefined) { pending.resolve({ status: 'unknown_device' }); continue }
      const rows = buildRows(device.id, values, sensors.get(device.id) ?? new Map(), problems)
      if (Object.keys(problems).length > 0) { pending.resolve({ status: 'rejected', problems }); continue }
      accepted.push({ pending, device, rows })
    }
    const results = await ctx.writer.writeAll(accepted.map((a) => a.rows))
    accepted.forEach(({ pending, device }, i) => {
      const result = results[i] ?? { stored: 0, duplicates: 0, inserted: [] }
      if (result.inserted.length > 0) ctx.onStored?.({ device, inserted: result.inserted })
      pending.resolve({ status: 'stored', device, stored: result.stored, duplicates: result.duplicates })
    })
  }
}
