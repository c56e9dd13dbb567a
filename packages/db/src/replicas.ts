import { createDatabase, type Database } from './client.js'
import { withDeadline } from './deadline.js'
import { databaseUnavailableReason } from './pg-errors.js'

/**
 * Streaming read replicas of the primary (DATABASE_READ_URL): one pool each, opened as the
 * primary's is, and a poll that measures how far each one is behind and keeps the lagging or
 * unreachable ones out of rotation. Which request may read from one is the api's rule
 * (services/api/src/read-routing.ts); this module only says which replica is fit to serve.
 *
 * Lag is measured in WAL positions, not with `now() - pg_last_xact_replay_timestamp()`: that
 * grows without bound while the primary is idle although the replica holds everything. Each poll
 * samples the primary's `pg_current_wal_insert_lsn()` first and then each replica's
 * `pg_last_wal_replay_lsn()` (not `pg_current_wal_lsn()`, the position written so far: with
 * asynchronous commit it trails commits already visible on the primary, and a replica just
 * started from a base backup would seem to hold writes it has not received); a replica whose replay position has reached a sample holds every
 * commit the primary had made when that sample was taken. Its lag in seconds is the age of the
 * newest such sample (0 when it has reached the one of this poll), its lag in bytes the distance
 * to the newest sample. So the seconds are an upper bound, at the poll's resolution.
 */

export interface ReplicaOptions {
  /** a replica further behind than this (or unreachable) is out of rotation until it catches up */
  maxLagSeconds: number
  /** how often the positions are polled */
  pollIntervalMs?: number
  /** problems and changes of rotation, for the operator; never with a password */
  log?: (level: 'info' | 'warn', fields: Record<string, unknown>, message: string) => void
  /** the clock (ms) of the lag, for tests */
  now?: () => number
}

export interface ReplicaStatus {
  /** host:port of its URL (never the password), with #n when two URLs name the same address */
  label: string
  inRotation: boolean
  /** bytes of WAL the primary had at the last poll that the replica had not replayed (null: unknown) */
  lagBytes: number | null
  /** seconds since the replica last held everything the primary had (null: never seen) */
  lagSeconds: number | null
  /** why it is out of rotation, when it is */
  reason: string | null
}

export interface Replica {
  readonly label: string
  readonly database: Database
}

interface ReplicaState extends Replica {
  status: ReplicaStatus
  /** when the primary last had nothing this replica lacked, as far as polls tell (ms) */
  caughtUpAt: number | null
}

interface Sample { at: number, lsn: bigint }

const DEFAULT_POLL_MS = 1000

/** A WAL position (`16/B374D848`) as a number of bytes. */
export function parseLsn (text: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text)
  if (match === null) throw new Error(`not a WAL position: ${text}`)
  return (BigInt(`0x${match[1]}`) << 32n) + BigInt(`0x${match[2]}`)
}

/** The part of a database URL that may be shown: host and port, never the user or password. */
export function databaseAddress (url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.hostname}:${parsed.port === '' ? '5432' : parsed.port}`
  } catch {
    return 'unparsable-url'
  }
}

/** The URLs of DATABASE_READ_URL: comma-separated, blanks ignored. */
export function readUrls (value: string | undefined): string[] {
  return (value ?? '').split(',').map((url) => url.trim()).filter((url) => url !== '')
}

export class ReadReplicas {
  private readonly replicas: ReplicaState[]
  private readonly pollIntervalMs: number
  private readonly now: () => number
  /** the primary's positions over the last maxLagSeconds and a margin, oldest first */
  private samples: Sample[] = []
  private next = 0
  private timer: NodeJS.Timeout | undefined
  private polling: Promise<void> | undefined
  private closed = false

  constructor (private readonly primary: Database, urls: readonly string[], private readonly options: ReplicaOptions) {
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_MS
    this.now = options.now ?? Date.now
    const seen = new Map<string, number>()
    // The same pool settings as the primary's (size, session settings, type parsers, back-off),
    // so a replica answers every statement exactly as the primary would.
    const { max, connection } = primary.sql.options
    const applicationName = connection.application_name
    this.replicas = urls.map((url) => {
      const address = databaseAddress(url)
      const count = (seen.get(address) ?? 0) + 1
      seen.set(address, count)
      const label = count === 1 ? address : `${address}#${count}`
      const database = createDatabase(url, { max, ...(applicationName === undefined ? {} : { applicationName }) })
      return { label, database, caughtUpAt: null, status: { label, inRotation: false, lagBytes: null, lagSeconds: null, reason: 'not polled yet' } }
    })
  }

  /** Polls once (so replicas that are fit serve from the first request on), then keeps polling. */
  async start (): Promise<void> {
    await this.poll()
    this.schedule()
  }

  /** The next replica in rotation (round robin), or undefined when none is fit: then the primary serves. */
  pick (): Replica | undefined {
    const count = this.replicas.length
    for (let i = 0; i < count; i++) {
      const replica = this.replicas[(this.next + i) % count]
      if (replica?.status.inRotation === true) {
        this.next = (this.next + i + 1) % count
        return replica
      }
    }
    return undefined
  }

  /**
   * A statement on the replica failed because it could not be reached: out of rotation at once,
   * rather than until the next poll; a poll that reaches it again brings it back.
   */
  markUnavailable (replica: Replica, reason: string): void {
    const state = this.replicas.find((r) => r === replica)
    if (state === undefined || !state.status.inRotation) return
    this.setRotation(state, false, reason)
  }

  statuses (): ReplicaStatus[] {
    return this.replicas.map((r) => ({ ...r.status }))
  }

  get list (): readonly Replica[] {
    return this.replicas
  }

  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    await this.polling
    await Promise.all(this.replicas.map(async (r) => { await r.database.close() }))
  }

  /** One round: the primary's position, then each replica's. Never throws. */
  async poll (): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => { this.polling = undefined })
    await this.polling
  }

  private schedule (): void {
    if (this.closed) return
    this.timer = setTimeout(() => { void this.poll().then(() => { this.schedule() }) }, this.pollIntervalMs)
    // The poll never keeps a process alive that has nothing else to do.
    this.timer.unref()
  }

  private async pollOnce (): Promise<void> {
    // A poll must not outlast its interval by much: a replica that hangs counts as unreachable.
    const deadline = Math.max(this.pollIntervalMs, 1000)
    const late = (): never => { throw new Error(`no answer within ${deadline} ms`) }
    try {
      const [row] = await withDeadline(this.primary.sql<Array<{ lsn: string }>>`select pg_current_wal_insert_lsn()::text as lsn`, deadline, late)
      if (row !== undefined) this.addSample({ at: this.now(), lsn: parseLsn(row.lsn) })
    } catch {
      // Without the primary's position no lag can be told; the replicas keep their last state
      // for a while (below), and the primary's own outage is reported by its health probe.
    }
    await Promise.all(this.replicas.map(async (replica) => { await this.pollReplica(replica, deadline, late) }))
  }

  private async pollReplica (replica: ReplicaState, deadline: number, late: () => never): Promise<void> {
    const now = this.now()
    try {
      const [row] = await withDeadline(replica.database.sql<Array<{ recovery: boolean, lsn: string | null }>>`
        select pg_is_in_recovery() as recovery, pg_last_wal_replay_lsn()::text as lsn`, deadline, late)
      // A server that is not (or no longer) replaying the primary's WAL, e.g. promoted after a
      // failover, has history of its own: it never serves reads meant to be the primary's.
      if (row?.recovery !== true || row.lsn === null) {
        this.update(replica, null, null, 'not a streaming replica (pg_is_in_recovery() is false)')
        return
      }
      this.measure(replica, parseLsn(row.lsn))
    } catch (err) {
      const reason = databaseUnavailableReason(err) ?? (err instanceof Error ? err.message : String(err))
      // Measured from its last answer: the lag keeps growing while it is away.
      const lagSeconds = replica.caughtUpAt === null ? null : (now - replica.caughtUpAt) / 1000
      this.update(replica, replica.status.lagBytes, lagSeconds, `unreachable: ${reason}`)
    }
  }

  private measure (replica: ReplicaState, replayed: bigint): void {
    const latest = this.samples.at(-1)
    if (latest === undefined) {
      this.update(replica, null, null, 'the primary\'s position is unknown')
      return
    }
    const lagBytes = latest.lsn > replayed ? Number(latest.lsn - replayed) : 0
    let caughtUp: Sample | undefined
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i]
      if (sample !== undefined && sample.lsn <= replayed) { caughtUp = sample; break }
    }
    const now = this.now()
    // Older than every sample kept: at least as old as the oldest, which is past the limit.
    const since = caughtUp === latest ? now : (caughtUp ?? this.samples[0] ?? latest).at
    if (caughtUp !== undefined) replica.caughtUpAt = since
    const lagSeconds = (now - since) / 1000
    const tooFar = caughtUp === undefined || lagSeconds > this.options.maxLagSeconds
    this.update(replica, lagBytes, lagSeconds, tooFar ? `more than ${this.options.maxLagSeconds} s behind the primary` : null)
  }

  private update (replica: ReplicaState, lagBytes: number | null, lagSeconds: number | null, reason: string | null): void {
    replica.status.lagBytes = lagBytes
    replica.status.lagSeconds = lagSeconds === null ? null : Math.round(lagSeconds * 1000) / 1000
    this.setRotation(replica, reason === null, reason)
  }

  private setRotation (replica: ReplicaState, inRotation: boolean, reason: string | null): void {
    const was = replica.status.inRotation
    replica.status.inRotation = inRotation
    replica.status.reason = reason
    if (was === inRotation) return
    const fields = { replica: replica.label, lagBytes: replica.status.lagBytes, lagSeconds: replica.status.lagSeconds }
    if (inRotation) this.options.log?.('info', fields, 'read replica in rotation')
    else this.options.log?.('warn', { ...fields, reason }, 'read replica out of rotation: its reads go to another replica or the primary')
  }

  private addSample (sample: Sample): void {
    const last = this.samples.at(-1)
    // An idle primary repeats its position: whoever holds it holds what the primary had then too.
    if (last !== undefined && last.lsn === sample.lsn) {
      last.at = sample.at
    } else {
      this.samples.push(sample)
    }
    // Kept a little longer than the limit, so a replica past it is still measured, not guessed.
    const horizon = sample.at - (this.options.maxLagSeconds * 1000 + 5 * this.pollIntervalMs)
    while (this.samples.length > 2 && (this.samples[0]?.at ?? 0) < horizon) this.samples.shift()
  }
}
