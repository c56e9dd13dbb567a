import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import type { Handle } from './client.js'

export const migrationsFolder = fileURLToPath(new URL('../../../db/migrations', import.meta.url))

/** Any constant works; it only has to be the same for every process that migrates this database. */
const MIGRATION_LOCK = 7_250_331_001

/**
 * Applies pending migrations. Several services may start at once against one database, so the
 * run is serialised with an advisory lock held on the migrating connection.
 */
export async function migrateDatabase (url: string, options: { engine?: 'timescale' | 'native' | undefined } = {}): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    await sql`select pg_advisory_lock(${MIGRATION_LOCK})`
    // Read by the time-series migration to force an engine (TS_ENGINE); session-wide on purpose.
    await sql`select set_config('esp.ts_engine', ${options.engine ?? ''}, false)`
    await migrate(drizzle(sql), { migrationsFolder })
    await sql`select pg_advisory_unlock(${MIGRATION_LOCK})`
  } finally {
    await sql.end()
  }
}

interface Journal { entries: { tag: string }[] }

export function expectedMigrationCount (): number {
  const journal = JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, 'utf8')) as Journal
  return journal.entries.length
}

/** Ready means reachable and fully migrated (GET /health/ready). */
export async function migrationStatus ({ sql }: Pick<Handle, 'sql'>): Promise<{ applied: number, expected: number }> {
  const expected = expectedMigrationCount()
  const rows = await sql<{ n: number }[]>`
    select case when to_regclass('drizzle.__drizzle_migrations') is null then 0
      else (select count(*)::int from drizzle.__drizzle_migrations) end as n`
  return { applied: rows[0]?.n ?? 0, expected }
}
