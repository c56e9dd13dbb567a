import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from './schema/index.js'

export type Schema = typeof schema
export type Db = PostgresJsDatabase<Schema> & { $client: postgres.Sql }
/** The database or an open transaction: query functions take either, so callers own transactions. */
export type Executor = Pick<Db, 'select' | 'insert' | 'update' | 'delete' | 'execute' | 'query'>
export type Sql = postgres.Sql

/**
 * The one database handle above this package: the pool (a Database) or an open transaction (what
 * `inTransaction` gives its work). Every query function of this package takes it first; nothing
 * above this package reads its members or writes SQL.
 */
export interface Handle {
  readonly db: Db
  /** in a transaction, the transaction's own postgres.js client (for pg-boss too, `sendJob`) */
  readonly sql: Sql
}

export interface Database extends Handle {
  url: string
  close: () => Promise<void>
}

export interface DatabaseOptions {
  max?: number
  /** connection label in pg_stat_activity */
  applicationName?: string
}

/**
 * How a process's one view of its database (DatabaseHealth in @esp/http) reaches the pool:
 * under this key, on the pool createDatabase returns; a plain postgres.js pool has none.
 */
export const POOL_GATE = Symbol.for('esp.pool-gate')

export interface PoolGate {
  /**
   * A connection of its own, past the gate, for the probe that notices the database's return: in
   * the pool it waited behind the backlog the outage left, and the gate stayed closed that long.
   */
  readonly probe: Sql
  /** from now on work given to the pool fails at once with an error like `cause` (what said the database is unavailable) */
  refuse: (cause: unknown) => void
  /** work goes to the database again */
  admit: () => void
}

/** How long after the pool starts refusing it reconnects without pausing: what was already queued fails at once. */
const DRAIN_MS = 250

/** The postgres.js query members the gate uses: a query runs when `handle` is first called. */
interface Runnable { handle: () => Promise<void>, executed: boolean, reject: (err: unknown) => void }
const isRunnable = (value: unknown): value is Runnable => value instanceof Promise &&
  typeof (value as Partial<Runnable>).handle === 'function' && typeof (value as Partial<Runnable>).reject === 'function'

/** An error the platform reads as the same unavailability as `cause` (pg-errors.ts reads `code` and `syscall`). */
function refusal (cause: unknown): Error {
  let current: unknown = cause
  for (let depth = 0; depth < 3 && current !== null && typeof current === 'object'; depth++) {
    if ('code' in current && typeof current.code === 'string') {
      const syscall = 'syscall' in current && typeof current.syscall === 'string' ? { syscall: current.syscall } : {}
      return Object.assign(new Error('the database is unavailable: the pool refuses work until it is back'), { code: current.code, ...syscall, cause })
    }
    current = 'cause' in current ? current.cause : undefined
  }
  return Object.assign(new Error('the database is unavailable: the pool refuses work until it is back'), { code: 'CONNECTION_CLOSED', cause })
}

export function createDatabase (url: string, options: DatabaseOptions = {}): Database {
  const max = options.max ?? 10
  let refusing: { since: number, error: Error } | null = null
  const pool = postgres(url, {
    max,
    onnotice: () => {},
    // postgres.js counts failed connections pool-wide (its listening connection too), so the pause
    // grows per round of the pool: 10-20 ms after the first, doubling to at most half a second
    // (the driver's own grows to 20 s, and HTTP stayed unavailable that long after an outage).
    // Right after the pool starts refusing none at all: what was queued on it then fails at once
    // instead of a round of pauses at a time (503s of a second and more under load).
    backoff: (retries: number) => refusing !== null && performance.now() - refusing.since < DRAIN_MS
      ? 0
      : Math.min(0.5, 0.01 * 2 ** Math.ceil(retries / max)) * (0.5 + Math.random() / 2),
    // A server that does not answer at all (a failover, a lost network) fails the attempt in 5 s, not 30.
    connect_timeout: 5,
    // UTC sessions: raw timestamptz text then always ends in +00 (see pgDate).
    connection: { application_name: options.applicationName ?? 'esp', TimeZone: 'UTC' },
    // count(*) and other int8 results come back as numbers: they stay far below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) } }
  })
  // While the database is known to be unavailable, work is refused before it reaches the pool:
  // each caller would otherwise wait for a connection attempt of its own, one round of the pool
  // at a time (the readings writer retries a failed group one write after the other). Decided
  // when a query runs, not when it is built, so a fragment built meanwhile is no query refused.
  const guard = <T>(query: T): T => {
    if (!isRunnable(query)) return query
    const handle = query.handle.bind(query)
    query.handle = async () => {
      if (refusing === null || query.executed) { await handle(); return }
      query.executed = true
      const { error } = refusing
      // A turn later, as postgres.js itself: the caller's handlers are attached by then.
      await Promise.resolve()
      query.reject(error)
    }
    return query
  }
  const refused = async (error: Error): Promise<never> => { throw error }
  const sql = new Proxy(pool, {
    apply: (target, thisArg, args: unknown[]) => guard(Reflect.apply(target, thisArg, args) as unknown),
    get: (target, key) => {
      if (key === POOL_GATE) return gate
      const value: unknown = Reflect.get(target, key)
      if (typeof value !== 'function') return value
      if (key === 'unsafe' || key === 'file') return (...args: unknown[]) => guard(Reflect.apply(value, target, args) as unknown)
      if (key === 'begin' || key === 'reserve') return async (...args: unknown[]) => refusing === null ? await (Reflect.apply(value, target, args) as Promise<unknown>) : await refused(refusing.error)
      return value
    }
  })
  const probe = postgres(url, {
    max: 1,
    onnotice: () => {},
    // the prober paces its attempts; closed soon after the outage ends
    backoff: () => 0,
    idle_timeout: 2,
    connect_timeout: 5,
    fetch_types: false,
    connection: { application_name: options.applicationName ?? 'esp', TimeZone: 'UTC' }
  })
  const gate: PoolGate = {
    probe,
    refuse: (cause) => { refusing = { since: performance.now(), error: refusal(cause) } },
    admit: () => { refusing = null }
  }
  const db = drizzle(sql, { schema, casing: 'snake_case' })
  return { db, sql, url, close: async () => { await Promise.all([sql.end({ timeout: 5 }), probe.end({ timeout: 5 })]) } }
}

/** An open transaction: a Handle like the pool's, so query functions take either. */
export type Transaction = Handle

/**
 * Runs `work` in one transaction, exposed both to Drizzle and as raw postgres.js, so that a job can
 * be enqueued in the same transaction as the change that causes it (STYLE.md §3.8). `mode` is what
 * BEGIN takes (e.g. `isolation level repeatable read read only` for reads that must agree).
 */
export async function inTransaction<T> (handle: Pick<Handle, 'sql'>, work: (tx: Handle) => Promise<T>, mode = ''): Promise<T> {
  const parent = handle.sql
  return await parent.begin(mode, async (sql) => {
    return await work(boundHandle(sql, parent))
  }) as T
}

/** A Handle over a transaction's (or savepoint's) own client, with the pool's type parsers. */
function boundHandle (sql: postgres.TransactionSql, parent: Sql): Handle {
  // drizzle reads the client's type parsers from `options`, which a postgres.js transaction
  // lacks; it shares the pool's, where the database's own drizzle instance already set them.
  const client = Object.assign(sql, { options: parent.options }) as unknown as Sql
  return { sql: client, db: drizzle(client, { schema, casing: 'snake_case' }) }
}

/**
 * Runs `work` in a savepoint of the transaction `tx`: a statement's error rolls back the
 * savepoint alone, so the transaction stays usable. Only postgres.js's own savepoints do this: in
 * a transaction it fails the whole transaction on any statement's error, caught or not.
 */
export async function inSavepoint<T> (tx: Handle, work: (sp: Handle) => Promise<T>): Promise<T> {
  const parent = tx.sql as Sql & Partial<Pick<postgres.TransactionSql, 'savepoint'>>
  if (parent.savepoint === undefined) throw new Error('a savepoint needs a transaction (inTransaction)')
  return await parent.savepoint(async (sql) => await work(boundHandle(sql, parent))) as T
}
