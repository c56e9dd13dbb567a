/**
 * wrk (C) as the bench's HTTP load client: one thread, `connections` keep-alive connections, a
 * closed loop for `seconds`. Its own CPU is a small share of a Node client's, which on a 2-core
 * machine capped the routes it measured (the bare lookup most of all).
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { progress } from './stats.js'

const execFileAsync = promisify(execFile)

export interface WrkOptions {
  connections: number
  /** whole seconds (wrk's -d) */
  seconds: number
  /** sent with every request, e.g. { authorization: 'Bearer …' } */
  headers?: Record<string, string>
  /**
   * Answers of 4xx/5xx ("Non-2xx or 3xx responses", which wrk counts for statuses above 399) and
   * socket errors throw unless allowed: only where they are the figure measured (cost: 503s under attack).
   */
  allowFailures?: boolean
}

export interface WrkResult {
  /** requests completed */
  requests: number
  /** the run's length as wrk measured it */
  seconds: number
  requestsPerSecond: number
  /** latency percentiles, ms */
  p50: number
  p75: number
  p90: number
  p99: number
  /** answers with a status above 399 */
  non2xx: number
  socketErrors: { connect: number, read: number, write: number, timeout: number }
}

let installed: Promise<void> | undefined

async function hasWrk (): Promise<boolean> {
  try {
    await execFileAsync('wrk', ['--version'])
    return true
  } catch (error) {
    // wrk --version prints its version and usage and exits with 1.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT'
  }
}

async function aptGet (args: string[]): Promise<void> {
  const root = process.getuid?.() === 0
  await execFileAsync(root ? 'apt-get' : 'sudo', root ? args : ['-n', 'apt-get', ...args], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 64 * 1024 * 1024 })
}

/** Installs wrk (Debian's package) if it is not on the PATH; once a process. */
export async function ensureWrk (): Promise<void> {
  installed ??= (async () => {
    if (await hasWrk()) return
    progress('wrk is not installed: apt-get install -y --no-install-recommends wrk')
    const install = ['install', '-y', '--no-install-recommends', 'wrk']
    try {
      await aptGet(install)
    } catch {
      progress('apt-get install failed: apt-get update, then again')
      await aptGet(['update'])
      await aptGet(install)
    }
    if (!await hasWrk()) throw new Error('wrk is still not on the PATH after apt-get install wrk')
  })()
  await installed
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** A wrk duration such as 216.00us, 1.52ms, 2.00s or 1.00m, in ms. */
function durationMs (value: string, unit: string, what: string, stdout: string): number {
  const factor = UNIT_MS[unit]
  if (factor === undefined) throw new Error(`wrk printed ${what} in an unknown unit ${unit}:\n${stdout}`)
  return unit === 'us' ? Number(value) / 1000 : Number(value) * factor
}

/** The figures of wrk's output (with --latency). */
export function parseWrk (stdout: string): WrkResult {
  const percentile = (label: string): number => {
    const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(stdout)
    if (match === null) throw new Error(`wrk printed no ${label}% latency:\n${stdout}`)
    return durationMs(match[1] ?? '', match[2] ?? '', `the ${label}% latency`, stdout)
  }
  const done = /^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h),/m.exec(stdout)
  if (done === null) throw new Error(`wrk printed no request count:\n${stdout}`)
  const rate = /^Requests\/sec:\s+([\d.]+)/m.exec(stdout)
  if (rate === null) throw new Error(`wrk printed no Requests/sec:\n${stdout}`)
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout)
  return {
    requests: Number(done[1]),
    seconds: durationMs(done[2] ?? '', done[3] ?? '', 'the run\'s length', stdout) / 1000,
    requestsPerSecond: Number(rate[1]),
    p50: percentile('50'),
    p75: percentile('75'),
    p90: percentile('90'),
    p99: percentile('99'),
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0),
    socketErrors: { connect: Number(errors?.[1] ?? 0), read: Number(errors?.[2] ?? 0), write: Number(errors?.[3] ?? 0), timeout: Number(errors?.[4] ?? 0) }
  }
}

/** `wrk -t1 -c<connections> -d<seconds>s --latency [-H header…] url`; installs wrk first if need be. */
export async function wrk (url: string, options: WrkOptions): Promise<WrkResult> {
  await ensureWrk()
  const headers = Object.entries(options.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`])
  const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--latency', ...headers, url]
  // As the messages show it: the headers' names only (no token).
  const command = `wrk -t1 -c${options.connections} -d${options.seconds}s --latency ${Object.keys(options.headers ?? {}).map((name) => `-H '${name}: …' `).join('')}${url}`
  let stdout: string
  try {
    stdout = (await execFileAsync('wrk', args, { maxBuffer: 16 * 1024 * 1024 })).stdout
  } catch (error) {
    const { code, stdout: out, stderr } = error as { code?: number | string, stdout?: string, stderr?: string }
    throw new Error(`${command} failed (${String(code)}):\n${out ?? ''}${stderr ?? ''}`)
  }
  const result = parseWrk(stdout)
  if (options.allowFailures !== true) {
    const { connect, read, write, timeout } = result.socketErrors
    if (result.non2xx > 0) throw new Error(`${url}: ${result.non2xx} of ${result.requests} answers had an error status, 400 or above (wrk's "Non-2xx or 3xx responses"; ${command}):\n${stdout}`)
    if (connect + read + write + timeout > 0) throw new Error(`${url}: socket errors: connect ${connect}, read ${read}, write ${write}, timeout ${timeout} (${command}):\n${stdout}`)
    if (result.requests === 0) throw new Error(`${url}: wrk completed no request:\n${stdout}`)
  }
  return result
}
