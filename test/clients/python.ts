import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { repoRoot } from '@esp/test-helpers/process'

const here = path.join(repoRoot, 'test', 'clients')
const requirements = path.join(here, 'requirements.txt')

export interface Run { code: number | null, stdout: string, stderr: string }

async function run (command: string, args: string[], options: { env?: Record<string, string>, timeoutMs?: number } = {}): Promise<Run> {
  const child = spawn(command, args, { cwd: repoRoot, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8') })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
  const timer = setTimeout(() => { child.kill('SIGKILL') }, options.timeoutMs ?? 120_000)
  const code = await new Promise<number | null>((resolve) => {
    child.on('close', (status) => { resolve(status) })
    child.on('error', (err) => { stderr += String(err); resolve(null) })
  })
  clearTimeout(timer)
  return { code, stdout, stderr }
}

let ready: Promise<string> | undefined

/**
 * The interpreter of a virtualenv holding test/clients/requirements.txt, made once per content
 * of that file and Python version (under node_modules/.cache, so a run after the first takes no
 * time). Test files run in parallel: the first to take the lock (an atomic mkdir) builds it in a
 * folder of its own and renames it into place; the others wait for it. pip takes packages from
 * the machine's index (its configuration) and tries nothing twice, so an index it cannot reach is
 * passed over at once rather than retried for a minute. A failure throws: the Python tests fail
 * rather than skip.
 */
export async function pythonClients (): Promise<string> {
  ready ??= (async () => {
    const key = createHash('sha256').update(readFileSync(requirements)).update((await run('python3', ['--version'])).stdout).digest('hex').slice(0, 16)
    const cache = path.join(repoRoot, 'node_modules', '.cache', 'esp-client-python')
    const venv = path.join(cache, key)
    const python = path.join(venv, 'bin', 'python')
    const installed = (): boolean => existsSync(path.join(venv, 'installed'))
    if (installed()) return python
    mkdirSync(cache, { recursive: true })
    const lock = `${venv}.lock`
    for (const deadline = Date.now() + 300_000; !takeLock(lock);) {
      if (installed()) return python
      // A lock older than any install is left by a run that was killed: taken over.
      if (Date.now() > deadline || lockAgeMs(lock) > 300_000) { rmSync(lock, { recursive: true, force: true }); continue }
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    try {
      if (installed()) return python
      const building = `${venv}.build-${process.pid}`
      rmSync(building, { recursive: true, force: true })
      const made = await run('python3', ['-m', 'venv', building])
      if (made.code !== 0) throw new Error(`python3 -m venv failed (${made.code}):\n${made.stderr}`)
      const pip = await run(path.join(building, 'bin', 'python'), ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--retries', '0', '--timeout', '20', '-q', '-r', requirements], { timeoutMs: 300_000 })
      if (pip.code !== 0) {
        rmSync(building, { recursive: true, force: true })
        throw new Error(`pip install -r test/clients/requirements.txt failed (${pip.code}):\n${pip.stderr}`)
      }
      writeFileSync(path.join(building, 'installed'), new Date().toISOString())
      rmSync(venv, { recursive: true, force: true })
      renameSync(building, venv)
      return python
    } finally {
      rmSync(lock, { recursive: true, force: true })
    }
  })()
  return await ready
}

function takeLock (lock: string): boolean {
  try {
    mkdirSync(lock)
    return true
  } catch {
    return false
  }
}

function lockAgeMs (lock: string): number {
  try {
    return Date.now() - statSync(lock).mtimeMs
  } catch {
    return 0
  }
}

/** Runs test/clients/python/<script> with one JSON argument; its stdout is one JSON document. */
export async function runPython<T = unknown> (script: string, argument: unknown, env: Record<string, string> = {}): Promise<T> {
  const python = await pythonClients()
  const result = await run(python, [path.join(here, 'python', script), JSON.stringify(argument)], { env: { PYTHONDONTWRITEBYTECODE: '1', ...env }, timeoutMs: 90_000 })
  if (result.code !== 0) throw new Error(`${script} exited ${result.code}:\n${result.stderr}\n${result.stdout}`)
  try {
    return JSON.parse(result.stdout) as T
  } catch {
    throw new Error(`${script} printed no JSON:\n${result.stdout}\n${result.stderr}`)
  }
}
