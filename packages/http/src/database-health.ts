import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { databaseUnavailability, databaseUnavailableReason, embeddedDatabaseStatus, type Handle, ping, poolGateOf, type PoolGate, withDeadline } from '@esp/db'
import { errors } from '@esp/domain'
import { sendError } from './error-handler.js'
import { PRESSURE_EXEMPT } from './pressure.js'

export interface DatabaseHealthOptions {
  /** pause between probes while the database is unavailable */
  probeIntervalMs?: number
  /** how long one probe may take before it counts as failed */
  probeTimeoutMs?: number
  /** told when the database goes away and when it is back (logs, metrics) */
  onChange?: (available: boolean, reason: string) => void
}

/**
 * The process's one view of its database. A failure that says the database is unreachable (noted
 * by whoever met it: a request, the broker, the readiness check) marks it unavailable; callers are
 * then refused at once (HTTP 503, MQTT CONNACK 3, no PUBACK) instead of each waiting on a
 * connection attempt; the pool itself then fails what waits on it. A probe on a connection of its
 * own, past the pool's gate (one at a time, every probeIntervalMs), marks it available again as
 * soon as a query succeeds there.
 */
export class DatabaseHealth {
  private down: { since: number, reason: string } | null = null
  private timer: NodeJS.Timeout | undefined
  private closed = false
  private confirming = false
  private readonly probeIntervalMs: number
  private readonly probeTimeoutMs: number
  private readonly gate: PoolGate | undefined
  /** past the pool's gate: the probe must reach the database while everyone else is refused */
  private readonly probeHandle: Pick<Handle, 'sql'>

  constructor (database: Pick<Handle, 'sql'>, private readonly options: DatabaseHealthOptions = {}) {
    this.probeIntervalMs = options.probeIntervalMs ?? 100
    this.probeTimeoutMs = options.probeTimeoutMs ?? 2000
    const { gate, probe } = poolGateOf(database)
    this.gate = gate
    this.probeHandle = probe
  }

  get available (): boolean { return this.down === null }

  /** why the database is unavailable, or null */
  get reason (): string | null { return this.down?.reason ?? null }

  /**
   * Takes note of an error; true when it says the database is unavailable (the caller refuses
   * its work). Only an unreachable database closes the gate: one that is up but lacks resources (a
   * full disk) refuses the requests that need them, and reads go on being answered.
   */
  note (err: unknown): boolean {
    const found = databaseUnavailability(err)
    if (found === null) return false
    if (found.unreachable && this.down === null && !this.closed) {
      if (found.certain) this.markDown(found.reason, err)
      else this.confirm(found.reason)
    }
    return true
  }

  private markDown (reason: string, cause: unknown): void {
    if (this.down !== null || this.closed) return
    // The pool fails what waits on it and what comes, so that nothing waits for a connection
    // attempt of its own: the gate only turns away requests that have not started.
    this.gate?.refuse(cause)
    this.down = { since: Date.now(), reason }
    this.options.onChange?.(false, reason)
    this.schedule(0)
  }

  /** An error that may not be the database's (a client gone mid-request): one query decides. */
  private confirm (reason: string): void {
    if (this.confirming) return
    this.confirming = true
    void this.ask().then((err) => {
      if (err !== null) this.markDown(downReason(err) ?? reason, err)
    }).finally(() => { this.confirming = false })
  }

  /** One `select 1` within probeTimeoutMs: null when it answered, else what it failed with. */
  private async ask (): Promise<unknown> {
    try {
      await withDeadline(ping(this.probeHandle), this.probeTimeoutMs, () => { throw Object.assign(new Error('probe timed out'), { code: 'CONNECT_TIMEOUT' }) })
      return null
    } catch (err) {
      return err
    }
  }

  close (): void {
    this.closed = true
    clearTimeout(this.timer)
  }

  private schedule (delayMs: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => { void this.probe() }, delayMs)
    this.timer.unref()
  }

  private async probe (): Promise<void> {
    if (this.closed || this.down === null) return
    const err = await this.ask()
    if (this.down === null) return
    if (err === null) {
      const downFor = Date.now() - this.down.since
      this.down = null
      this.gate?.admit()
      this.options.onChange?.(true, `back after ${downFor} ms`)
    } else {
      this.down.reason = downReason(err) ?? this.down.reason
      this.schedule(this.probeIntervalMs)
    }
  }
}

/**
 * Why the database does not answer: an embedded server of this process that is being started
 * again knows more (its disk is full) than the refused connection says.
 */
function downReason (err: unknown): string | null {
  const { outage } = embeddedDatabaseStatus()
  if (outage !== null) return `the database is unavailable: ${outage}`
  return databaseUnavailableReason(err)
}

declare module 'fastify' {
  interface FastifyInstance {
    databaseHealth: DatabaseHealth
  }
}

/** Routes that never touch the database answer during an outage too: health, metrics and the pages (docs, explorer). */
const needsDatabase = (path: string, pagePaths: readonly string[]): boolean =>
  !PRESSURE_EXEMPT.has(path) && !pagePaths.some((page) => path === page || path.startsWith(`${page}/`))

/**
 * While the database is unavailable every request that needs it is answered at once with 503,
 * Retry-After and the reason, in the one error shape; /health/ready among them. Any request that
 * fails on an unavailable database (the error handler answers it the same way) tells the health.
 */
export const databaseGatePlugin = fp(async (app: FastifyInstance, options: { health: DatabaseHealth, pagePaths: readonly string[] }) => {
  const { health } = options
  app.decorate('databaseHealth', health)
  app.addHook('onRequest', async (request, reply) => {
    if (health.available || request.routeOptions.config.ungated === true || !needsDatabase(request.routeOptions.url ?? request.url, options.pagePaths)) return
    return sendError(reply, errors.databaseUnavailable(health.reason ?? 'the database is unavailable'))
  })
  app.addHook('onError', async (_request, _reply, error) => { health.note(error) })
  app.addHook('onClose', async () => { health.close() })
}, { name: 'esp-database-gate' })
