import type { RejectionReason } from './batch.js'
import { type IngestContext, type ReadingsMessage, type StoreOutcome, storeMessages } from './ingest.js'

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

export type MessageOutcome = StoreOutcome

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

const asReadingsMessage = ({ token, data, refused }: DeviceMessage): ReadingsMessage =>
  refused !== undefined ? { token, refused } : { token, data }

/**
 * Device messages (MQTT, embedded or external broker) in short batches, bounded by count and by a
 * few milliseconds, each batch through storeMessages, the one ingest path: its tokens found in one
 * query and its sensors in another, its writes into the group commit. Kept on measurement (issue
 * 36): without it every message cost its own two lookups before the group commit, and the MQTT
 * benchmark (50 kits, QoS 1) fell from 2,489 to 1,085 messages/s. Each message is still
 * acknowledged only after its commit. Validation is per message, as for a posted batch: one bad
 * message is rejected whole and never fails its neighbours; values of unknown sensors are skipped
 * and the rest stored. Both are noted in the device's ingest status (ctx.status). A submit rejects
 * only when the database fails, so the caller can withhold the acknowledgement and the device
 * sends again.
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
    const run = storeMessages(this.ctx, batch.map((pending) => asReadingsMessage(pending.message)), { noteStatus: true }).then((outcomes) => {
      batch.forEach((pending, i) => { pending.resolve(outcomes[i] ?? { status: 'unknown_device' }) })
    }, (err: unknown) => { for (const pending of batch) pending.reject(err) })
    this.running.add(run)
    void run.finally(() => {
      this.running.delete(run)
      this.storing -= batch.length
    })
  }
}
