import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, readlink, realpath, rm } from 'node:fs/promises'
import path from 'node:path'
import { withDeadline } from './deadline.js'

/**
 * The embedded PostgreSQL lives and dies with the process that starts it (issue 21):
 * - it runs in a session of its own (`detached`), so a terminal's Ctrl+C, which goes to the whole
 *   foreground process group, reaches only the platform; the platform drains, then stops it;
 * - it gets SIGINT (fast shutdown) from the kernel when the starting process dies in any way,
 *   SIGKILL and the OOM killer included: util-linux's `setpriv --pdeathsig` sets the parent-death
 *   signal (prctl PR_SET_PDEATHSIG) and execs postgres in the same process, so there is no extra
 *   process to supervise and no pipe to watch;
 * - a postmaster that an earlier run left behind (an older version had no watchdog) is recognised
 *   as ours by its working directory, which a postmaster sets to its data directory, and stopped
 *   before the new one starts. A postmaster whose parent is a live Node process belongs to another
 *   platform process and is never touched.
 */

/** setpriv is part of util-linux, which every glibc distribution the binaries run on installs. */
const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((file) => existsSync(file))

// A standby (a read replica of the tests) says `ready to accept read-only connections`.
const READY = /database system is ready to accept (read-only )?connections/

/** SIGINT is a fast shutdown (sessions end, checkpoint); SIGQUIT an immediate one; then SIGKILL. */
const SHUTDOWN_STEPS: ReadonlyArray<readonly [NodeJS.Signals, number]> = [['SIGINT', 30_000], ['SIGQUIT', 5_000], ['SIGKILL', 5_000]]

export interface PostmasterOptions {
  /** the postgres executable */
  binary: string
  clusterDir: string
  args: string[]
  /** the postgres OS user, when running as root */
  ids?: { uid: number, gid: number } | undefined
  onLog: (chunk: string) => void
  /** a line for the operator (the platform's own, not the server's log) */
  notice?: ((message: string) => void) | undefined
}

export interface PostmasterExit { code: number | null, signal: NodeJS.Signals | null }

export interface Postmaster {
  pid: number | undefined
  /** fast shutdown; resolves once the server has exited */
  stop: () => Promise<void>
  /** settles when the server has exited, whoever stopped it */
  exited: Promise<PostmasterExit>
}

/** How a postmaster ended, for the operator: `killed by SIGKILL`, `exit code 1`. */
export const describeExit = (exit: PostmasterExit): string =>
  exit.signal !== null ? `killed by ${exit.signal}` : `exit code ${exit.code ?? 'unknown'}`

/** Starts postgres and resolves once it accepts connections; rejects (with its log) if it exits first. */
export async function spawnPostmaster (options: PostmasterOptions): Promise<Postmaster> {
  const args = ['-D', options.clusterDir, ...options.args]
  if (SETPRIV === undefined) options.notice?.('setpriv (util-linux) is missing: the embedded PostgreSQL will outlive a crash of this process until the next start stops it')
  const child = SETPRIV === undefined
    ? spawn(options.binary, args, spawnOptions(options))
    : spawn(SETPRIV, ['--pdeathsig', 'INT', '--', options.binary, ...args], spawnOptions(options))
  const exited = new Promise<PostmasterExit>((resolve) => { child.once('exit', (code, signal) => { resolve({ code, signal }) }) })
  let ready = false
  let tail = ''
  await new Promise<void>((resolve, reject) => {
    // The stream is read for the server's whole life: a full pipe would block its logging.
    child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8')
      options.onLog(text)
      if (ready) return
      tail = (tail + text).slice(-4096)
      ready = READY.test(tail)
      if (ready) resolve()
    })
    child.on('error', reject)
    void exited.then((exit) => { reject(new Error(`postgres exited during start (${describeExit(exit)})`)) })
  })
  return { pid: child.pid, stop: async () => { await stopChild(child, exited) }, exited }
}

function spawnOptions (options: PostmasterOptions): Parameters<typeof spawn>[2] {
  return {
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // postgres needs nothing from the platform's environment, which holds its secrets.
    env: { LC_MESSAGES: 'C' },
    ...(options.ids ?? {})
  }
}

async function stopChild (child: ChildProcess, exited: Promise<PostmasterExit>): Promise<void> {
  for (const [signal, waitMs] of SHUTDOWN_STEPS) {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill(signal)
    if (await settlesWithin(exited, waitMs)) return
  }
}

type Holder = 'none' | 'other' | 'orphan' | 'platform' | 'unknown'

/**
 * Makes the cluster startable after any crash. postmaster.pid names the last postmaster:
 * - a dead one (or a pid reused by an unrelated process, e.g. after a reboot): the file is removed,
 *   since postgres refuses to start while the pid in it is alive;
 * - a live postmaster of this cluster whose platform is gone: stopped cleanly;
 * - a live one that a running platform process uses, or one that cannot be inspected: an error.
 */
export async function releaseCluster (clusterDir: string, notice?: (message: string) => void): Promise<void> {
  const pidFile = path.join(clusterDir, 'postmaster.pid')
  let text: string
  try {
    text = await readFile(pidFile, 'utf8')
  } catch {
    return
  }
  const pid = Number.parseInt(text.split('\n')[0] ?? '', 10)
  const holder = Number.isInteger(pid) && pid > 0 ? await holderOf(pid, clusterDir) : 'none'
  if (holder === 'platform') {
    throw new Error(`the embedded PostgreSQL in ${clusterDir} is already running (pid ${pid}) for another platform process: stop that one, or give this one another DATA_DIR`)
  }
  if (holder === 'unknown') {
    throw new Error(`${pidFile} names a running process (pid ${pid}) that this user may not inspect: if it is a PostgreSQL of this folder, stop it`)
  }
  if (holder === 'orphan') {
    notice?.(`stopping the embedded PostgreSQL (pid ${pid}) that an earlier run of the platform left running`)
    await stopOrphan(pid, clusterDir)
  }
  // A clean shutdown removed it already; after a crash it is stale.
  await rm(pidFile, { force: true })
}

async function stopOrphan (pid: number, clusterDir: string): Promise<void> {
  const gone = async (): Promise<boolean> => {
    const holder = await holderOf(pid, clusterDir)
    return holder === 'none' || holder === 'other'
  }
  for (const [signal, waitMs] of SHUTDOWN_STEPS) {
    // Checked again before each signal: the pid may have been freed and reused meanwhile.
    if (await gone()) return
    process.kill(pid, signal)
    for (const deadline = Date.now() + waitMs; Date.now() < deadline;) {
      if (await gone()) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  throw new Error(`the embedded PostgreSQL in ${clusterDir} (pid ${pid}) did not stop`)
}

/**
 * Who `pid` is, from /proc (Linux, like the bundled binaries): gone (or a zombie), an unrelated
 * process, or a postgres whose working directory is this cluster. Such a postmaster belongs to a
 * running platform when its parent is a Node process: a postmaster is always started directly by
 * one, and after that process dies it is re-parented to init or a subreaper.
 */
async function holderOf (pid: number, clusterDir: string): Promise<Holder> {
  let cwd: string
  let exe: string
  try {
    [cwd, exe] = await Promise.all([readlink(`/proc/${pid}/cwd`), readlink(`/proc/${pid}/exe`)])
  } catch (err) {
    // A zombie has no cwd left (ENOENT) like a process that is gone.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'unknown'
  }
  // (a binary replaced since, e.g. by a reinstall, reads "… (deleted)")
  if (undeleted(cwd) !== await realpath(clusterDir) || path.basename(undeleted(exe)) !== 'postgres') return 'other'
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  const ppid = Number.parseInt(/^PPid:\s*(\d+)/m.exec(status)?.[1] ?? '0', 10)
  if (ppid <= 1) return 'orphan'
  // An unreadable parent runs as another user: not a platform process of ours.
  const parent = await readlink(`/proc/${ppid}/exe`).catch(() => '')
  return path.basename(parent).startsWith('node') ? 'platform' : 'orphan'
}

const undeleted = (link: string): string => link.replace(/ \(deleted\)$/, '')

async function settlesWithin (promise: Promise<unknown>, ms: number): Promise<boolean> {
  return await withDeadline(promise.then(() => true), ms, () => false)
}
