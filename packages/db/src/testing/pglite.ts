import { PGlite } from '@electric-sql/pglite'
import { timescaledb } from '@electric-sql/pglite/timescaledb'
import { drizzle } from 'drizzle-orm/pglite'
import { migrate } from 'drizzle-orm/pglite/migrator'
import { migrationsFolder } from '../migrate.js'
import type { Runner } from '../timeseries/engine.js'

export interface TimescalePglite {
  db: PGlite
  runner: Runner
  close: () => Promise<void>
}

/** PGlite as a Runner. */
export function pgliteRunner (db: PGlite): Runner {
  return {
    // PGlite serialises JS arrays itself from the parameter types the server reports (checked for
    // int[], bigint[], float8[], timestamptz[] and text[], NULL elements included), so the
    // `unnest($n::type[])` statements of the write path get their arrays as they are.
    query: async <T extends object>(text: string, params: unknown[] = []) => (await db.query<T>(text, params)).rows,
    // PGlite has no STDIN: a COPY reads the query's blob from its /dev/blob device.
    copyOutBinary: async (query) => {
      const { blob } = await db.query(`copy (${query}) to '/dev/blob' (format binary)`)
      return blob === undefined ? [] : [new Uint8Array(await blob.arrayBuffer())]
    },
    copyBinary: async (target, data, before = []) => {
      for (const statement of before) await db.query(statement.text, statement.params ?? [])
      await db.query(`copy ${target} from '/dev/blob' (format binary)`, [], { blob: new Blob([data]) })
    }
  }
}

/**
 * `work` in one transaction of a Runner that has none of its own (PGlite is a single session), as
 * the write path expects to run.
 */
export async function inRunnerTransaction<T> (runner: Runner, work: () => Promise<T>): Promise<T> {
  await runner.query('begin')
  try {
    const result = await work()
    await runner.query('commit')
    return result
  } catch (err) {
    await runner.query('rollback')
    throw err
  }
}

/**
 * An in-memory PGlite with TimescaleDB (the `@electric-sql/pglite` override, PITFALLS.md §3),
 * migrated with the platform's migrations and the timescale engine forced: the conformance
 * suite's stand-in for a TimescaleDB server. Each instance costs 0.5–0.9 GB, so open one per file.
 */
export async function openTimescalePglite (): Promise<TimescalePglite> {
  // One options object: `PGlite.create(undefined, opts)` silently drops the extensions.
  const db = await PGlite.create({
    extensions: { timescaledb },
    // int8 as numbers, as the postgres.js client is configured (client.ts): counts stay below 2^53.
    parsers: { 20: (value: string) => Number(value) }
  })
  try {
    // Session-wide (is_local false): the migrator runs every migration in one later transaction.
    await db.query("select set_config('esp.ts_engine', 'timescale', false)")
    await migrate(drizzle(db), { migrationsFolder })
  } catch (err) {
    await db.close()
    // drizzle wraps the failure as `Failed query: …`; PostgreSQL's own message is in `cause`.
    const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : ''
    throw new Error(`migrating the TimescaleDB PGlite failed${cause}`, { cause: err })
  }
  return { db, runner: pgliteRunner(db), close: async () => { await db.close() } }
}
