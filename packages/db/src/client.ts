import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import * as schema from './schema/index.js'

export type Schema = typeof schema
export type Db = PostgresJsDatabase<Schema>
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
    connection: { application_name: options.applicationName ?? 'esp' },
    // count(*) and other int8 results come back as numbers: they stay far below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (value: number) => String(value), parse: (value: string) => Number(value) } }
  })
  const db = drizzle(sql, { schema, casing: 'snake_case' })
  return { db, sql, url, close: async () => { await sql.end({ timeout: 5 }) } }
}
