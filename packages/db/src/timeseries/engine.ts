import type { Readable, Writable } from 'node:stream'

/**
 * The time-series layer: one interface, two engines (DESIGN.md). The SQL here runs through a
 * minimal Runner, so the same code drives postgres.js in production and PGlite (the TimescaleDB
 * build) in the conformance suite.
 */
export type EngineName = 'native' | 'timescale'

/** A statement of a pipeline: its text and bound parameters. */
export interface Statement { text: string, params?: unknown[] }

export interface Runner {
  query: <T extends object = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<T[]>
  /**
   * Statements sent together and answered in order, each with its rows: one round trip where the
   * driver pipelines (postgres.js). The first error rejects, and the statements after it still run
   * (in a transaction, that aborted one). Without it, runPipeline sends them one after another.
   */
  pipeline?: (statements: readonly Statement[]) => Promise<unknown[][]>
  /**
   * `COPY target FROM` these bytes in PostgreSQL's binary format, where the driver can stream
   * them (postgres.js; PGlite through its blob device), after the `before` statements, sent with
   * its start. Without it the write path inserts rows.
   */
  copyBinary?: (target: string, data: Uint8Array, before?: readonly Statement[]) => Promise<void>
  /**
   * The bytes of `COPY (query) TO STDOUT (FORMAT binary)`, in the chunks they came in (postgres.js;
   * PGlite through its blob device). The query takes no parameters.
   */
  copyOutBinary: (query: string) => Promise<Uint8Array[]>
}

/** The statements on `runner`, pipelined where it can, each one's rows in order. */
export async function runPipeline (runner: Runner, statements: readonly Statement[]): Promise<unknown[][]> {
  if (statements.length === 0) return []
  if (runner.pipeline !== undefined) return await runner.pipeline(statements)
  const results: unknown[][] = []
  for (const statement of statements) results.push(await runner.query(statement.text, statement.params))
  return results
}

export interface ReadingRow {
  deviceId: number
  sensorId: number
  recordedAt: Date
  value: number
  rawValue: number
}

/** The write path's order of readings: by device, sensor and time. */
export const compareReadings = (a: ReadingRow, b: ReadingRow): number =>
  a.deviceId - b.deviceId || a.sensorId - b.sensorId || a.recordedAt.getTime() - b.recordedAt.getTime()

/**
 * A stored rollup tier: fixed buckets of `ms`, aligned on the UTC epoch, or for a daily tier of a
 * wall clock (day-offsets.ts) on the midnights `offsetMinutes` ahead of UTC.
 */
export interface Tier { name: 'daily' | 'hourly', table: 'readings_daily' | 'readings_hourly' | 'readings_daily_offset', ms: number, offsetMinutes?: number }

export const TIERS: readonly Tier[] = [
  { name: 'daily', table: 'readings_daily', ms: 24 * 3600 * 1000 },
  { name: 'hourly', table: 'readings_hourly', ms: 3600 * 1000 }
]

export interface TimeSeriesEngine {
  readonly name: EngineName
  /** Before a write transaction: whatever rows at these times need to exist (partitions), outside it. */
  prepare: (runner: Runner, times: Iterable<Date>) => Promise<void>
  /** What the write transaction runs after the raw insert, for the rows actually inserted (sorted). */
  afterInsert: (inserted: readonly ReadingRow[]) => Statement[]
  /** Deletes every reading of these devices, raw and tiers, in the caller's transaction (device purge). */
  purgeDevices: (tx: Runner, deviceIds: number[]) => Promise<void>
}

export async function engineName (runner: Runner): Promise<EngineName> {
  const rows = await runner.query<{ value: string }>("select value from esp_settings where key = 'ts_engine'")
  const name = rows[0]?.value
  if (name !== 'native' && name !== 'timescale') throw new Error(`the database has no time-series engine recorded (got ${String(name)}): run the migrations`)
  return name
}

/**
 * A JS array as a PostgreSQL array literal. Drivers infer an array parameter's type from its
 * elements (postgres.js types an array of Dates as a single timestamptz); a literal with an explicit
 * cast in the SQL (`$1::timestamptz[]`) works the same on every driver.
 */
export function pgArrayLiteral (values: readonly unknown[]): string {
  const items = values.map((v) => {
    if (v === null || v === undefined) return 'NULL'
    if (v instanceof Date) return `"${v.toISOString()}"`
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : `"${String(v)}"`
    return `"${String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`
  })
  return `{${items.join(',')}}`
}

/**
 * Parameters as text the server casts: arrays become literals and Dates ISO strings (drizzle
 * replaces postgres.js's timestamp serializers on the shared client, so a Date would not bind).
 */
export const asTextParams = (params: readonly unknown[]): unknown[] =>
  params.map((p) => Array.isArray(p) ? pgArrayLiteral(p) : p instanceof Date ? p.toISOString() : p)

interface PostgresJs {
  unsafe: (text: string, params?: never[], options?: { prepare?: boolean }) => PromiseLike<unknown> & { writable: () => Promise<Writable>, readable: () => Promise<Readable> }
}

/** postgres.js as a Runner (a pool, a reserved connection or a transaction). */
export function postgresRunner (sql: PostgresJs): Runner {
  // Prepared: the time-series SQL is a handful of fixed texts, parsed and planned once per connection.
  const run = (statement: Statement): PromiseLike<unknown> => sql.unsafe(statement.text, asTextParams(statement.params ?? []) as never[], { prepare: true })
  return {
    query: async <T extends object>(text: string, params: unknown[] = []) => await run({ text, params }) as unknown as T[],
    // postgres.js runs a query once asked for its result, and writes what is asked in one turn
    // together: on a transaction or a reserved connection, the statements share one round trip.
    pipeline: async (statements) => await Promise.all(statements.map(run)) as unknown[][],
    copyOutBinary: async (query) => {
      const chunks: Uint8Array[] = []
      for await (const chunk of await sql.unsafe(`copy (${query}) to stdout (format binary)`).readable()) chunks.push(chunk as Uint8Array)
      return chunks
    },
    copyBinary: async (target, data, before = []) => {
      const ahead = Promise.all(before.map(run))
      const [settled, copy] = await Promise.allSettled([ahead, sql.unsafe(`copy ${target} from stdin (format binary)`).writable()])
      // A failed statement ahead fails the COPY behind it too (the transaction is aborted): its own error says why.
      if (settled.status === 'rejected') {
        if (copy.status === 'fulfilled') copy.value.destroy(settled.reason instanceof Error ? settled.reason : new Error('failed ahead of the COPY'))
        throw settled.reason
      }
      if (copy.status === 'rejected') throw copy.reason
      const writable = copy.value
      // Settles on the server's answer either way: postgres.js is patched so that a COPY the server
      // rejects after the last byte errors the writable (porsager/postgres#1173).
      await new Promise<void>((resolve, reject) => {
        writable.on('error', reject)
        writable.on('finish', resolve)
        writable.end(data)
      })
    }
  }
}

/**
 * A timestamptz from a Runner: a Date, or text in PostgreSQL's ISO output (`2026-11-01 10:01:00+00`,
 * with optional fraction and a `+hh[:mm]` offset). The platform's own pool returns text, because
 * drizzle takes over timestamp parsing on the client it shares.
 */
export function pgDate (value: unknown): Date {
  if (value instanceof Date) return value
  if (typeof value === 'string') {
    const iso = value.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00')
    const at = new Date(iso)
    if (!Number.isNaN(at.getTime())) return at
  }
  throw new Error(`not a timestamp: ${String(value)}`)
}

export const pgDateOrNull = (value: unknown): Date | null => value === null || value === undefined ? null : pgDate(value)
