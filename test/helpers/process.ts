import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

/** The `HTTP  http://…/v0/` line a service prints once it listens; group 1 is its base URL. */
export const HTTP_LINE = /HTTP\s+(http:\/\/\S+?)\/v0\//

export const repoRoot = path.resolve(import.meta.dirname, '..', '..')

interface Tap { teardown: (fn: () => unknown) => void }

export interface Started {
  child: ChildProcess
  output: () => string
  /** resolves with the first match of the pattern in the output */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpExecArray>
  exited: Promise<number | null>
}

/**
 * Runs an entry point of the repository as a real process: a TypeScript one as `pnpm start` does,
 * a built one (`dist/….js`, after `pnpm build`) with plain node, as in production. `detached`
 * gives it a process group of its own, as a shell gives a foreground job (its pid is the group's id).
 * `nodeArgs` replaces the loader flags (see startScriptArgs).
 */
export function startProcess (t: Tap, entry: string, env: Record<string, string | undefined>, options: { detached?: boolean, nodeArgs?: string[] } = {}): Started {
  const loader = options.nodeArgs ?? (entry.endsWith('.js') ? [] : ['--conditions=@esp/source', '--import', 'tsx'])
  const child = spawn(process.execPath, [...loader, entry], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false
  })
  let text = ''
  const listeners = new Set<() => void>()
  const onData = (chunk: Buffer): void => {
    text += chunk.toString('utf8')
    for (const listener of listeners) listener()
  }
  child.stdout?.on('data', onData)
  child.stderr?.on('data', onData)
  const exited = new Promise<number | null>((resolve) => { child.on('exit', (code) => { resolve(code) }) })
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    }
  })
  return {
    child,
    output: () => text,
    exited,
    waitFor: async (pattern, timeoutMs = 60_000) => await new Promise((resolve, reject) => {
      const check = (): void => {
        const match = pattern.exec(text)
        if (match !== null) {
          listeners.delete(check)
          clearTimeout(timer)
          resolve(match)
        }
      }
      const timer = setTimeout(() => {
        listeners.delete(check)
        reject(new Error(`timed out waiting for ${String(pattern)}; output so far:\n${text}`))
      }, timeoutMs)
      listeners.add(check)
      void exited.then(() => { setTimeout(() => { if (listeners.has(check)) { listeners.delete(check); clearTimeout(timer); reject(new Error(`process exited before ${String(pattern)}:\n${text}`)) } }, 50) })
      check()
    })
  }
}

/** A data folder the embedded PostgreSQL (running as the postgres user) can enter. */
export function tempDataDir (t: Tap): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-e2e-'))
  chmodSync(dir, 0o755)
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

/** Node's flags in package.json's `start` script: what `pnpm start` runs scripts/start.ts with. */
export function startScriptArgs (): string[] {
  const script = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start ?? ''
  const words = script.split(/\s+/)
  return words.slice(words.indexOf('node') + 1, words.indexOf('scripts/start.ts'))
}

/**
 * Api processes (replicas) on one database, each with a data folder of its own, started at the
 * same moment, as a deployment starts them. The environment adds to what every replica gets
 * (PORT 0, the database, one JWT secret for all).
 */
export async function startApiReplicas (t: Tap, databaseUrl: string, env: Record<string, string>, count = 2): Promise<string[]> {
  const shared = { PORT: '0', DATABASE_URL: databaseUrl, JWT_SECRET: randomBytes(32).toString('hex'), RATE_LIMIT_PER_MINUTE: '100000', ...env }
  const started = Array.from({ length: count }, () => startProcess(t, 'services/api/src/main.ts', { ...shared, DATA_DIR: tempDataDir(t) }))
  return await Promise.all(started.map(async (process) => (await process.waitFor(HTTP_LINE, 90_000))[1] ?? ''))
}
