import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from './schema/index.js'

export type Schema = typeof schema
export type Db = PostgresJsDatabase<Schema> & { $client: postgres.Sql }
/** The database or an open transaction: query functions take either, so callers own transactions. */
export type Executor = Pick<Db, 'select' | 'insert' | 'update' | 'delete' | 'execute' | 'query'>
export type Sql = postgres.Sql

export interface Database {
  db: Db
  sql: Sql
  url: string
  close: () => Promise<void>
}

export interface DatabaseOptions {
  max?: number
  /** connection label in pg_stat_activity */
  applicationName?: string
}

export function createDatabase (url: string, options: DatabaseOptions = {}): Database {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    // After the database comes back, a connection is tried again within half a second: the
    // driver's own back-off grows to 20 s, and HTTP stayed unavailable that long after an outage.
    backoff: (retries: number) => Math.min(0.5, 0.01 * 2 ** retries) * (0.5 + Math.random() / 2),
    // A server that does not answer at all (a failover, a lost network) fails the attempt in 5 s, not 30.
    connect_timeout: 5,
    // UTC sessions: raw timestamptz text then always ends in +00 (see pgDate).
    connection: { application_name: options.applicationName ?? 'esp', TimeZone: 'UTC' },
    // count(*) and other int8 results come back as numbers: they stay far below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) } }
  })
  const db = drizzle(sql, { schema, casing: 'snake_case' })
  return { db, sql, url, close: async () => { await sql.end({ timeout: 5 }) } }
}

export interface Transaction {
  db: Db
  /** the same transaction for raw SQL and for pg-boss (`sendJob`) */
  sql: postgres.TransactionSql
}

/**
 * Runs `work` in one transaction, exposed both to Drizzle and as raw postgres.js, so that a job can
 * be enqueued in the same transaction as the change that causes it (STYLE.md §3.8). `mode` is what
 * BEGIN takes (e.g. `isolation level repeatable read read only` for reads that must agree).
 */
export async function inTransaction<T> (database: Pick<Database, 'sql'>, work: (tx: Transaction) => Promise<T>, mode = ''): Promise<T> {
  const parent = database.sql
  return await parent.begin(mode, async (sql) => {
    // drizzle reads the client's type parsers from `options`, which a postgres.js transaction
    // lacks; it shares the pool's, where the database's own drizzle instance already set them.
    const client = Object.assign(sql, { options: parent.options }) as unknown as Sql
    return await work({ sql, db: drizzle(client, { schema, casing: 'snake_case' }) })
  }) as T
}
