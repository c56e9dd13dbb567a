import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { Agent, get, type IncomingMessage, request } from 'node:http'
import path from 'node:path'

/** Percentile of a sample (nearest rank). */
export function percentile (values: number[], p: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN
}

export const round = (value: number, digits = 2): number => Number(value.toFixed(digits))

export function progress (message: string): void {
  process.stderr.write(`[bench] ${message}\n`)
}

/** Times `fn` `runs` times after `warmup` runs; milliseconds per run. */
export async function timeRuns (runs: number, warmup: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn()
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await fn()
    times.push(performance.now() - start)
  }
  return times
}

/**
 * Runs a script of this folder in a process of its own (so its work takes no event-loop time from
 * the server it measures) with one JSON argument, and returns the JSON of its last output line.
 */
export async function runScript<T> (file: string, options: unknown, what: string): Promise<T> {
  const child = spawn(process.execPath, [...process.execArgv, path.join(import.meta.dirname, file), JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => { child.on('exit', resolve) })
  if (code !== 0) throw new Error(`${what} failed (${String(code)})`)
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as T
}

const keepAlive = new Agent({ keepAlive: true })

/** A response's body as text. */
async function text (res: IncomingMessage): Promise<string> {
  const parts: Buffer[] = []
  for await (const chunk of res) parts.push(chunk as Buffer)
  return Buffer.concat(parts).toString()
}

/** Resolves with the response once it is a 200; anything else is an error naming it. */
async function ok (method: string, url: string, res: IncomingMessage): Promise<IncomingMessage> {
  if (res.statusCode === 200) return res
  throw new Error(`${method} ${url}: ${res.statusCode ?? 0} ${await text(res)}`)
}

/**
 * GET over node:http on a kept-alive connection; resolves with the response once it is a 200. The
 * bench's client shares the cores, or the very event loop, with the service it measures, and
 * fetch's web streams cost it several times what a plain socket read does.
 */
export async function httpGet (url: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  const res = await new Promise<IncomingMessage>((resolve, reject) => { get(url, { agent: keepAlive, headers }, resolve).on('error', reject) })
  return await ok('GET', url, res)
}

/** POSTs `body` as httpGet gets, and resolves with the text of the 200 response. */
export async function httpPost (url: string, headers: Record<string, string>, body: string): Promise<string> {
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    request(url, { method: 'POST', agent: keepAlive, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, resolve)
      .on('error', reject)
      .end(body)
  })
  return await text(await ok('POST', url, res))
}

/** Reads a response to its end. */
export async function drain (res: IncomingMessage): Promise<void> {
  for await (const _ of res) { /* the bytes are not needed */ }
}

const VM_RSS = /^VmRSS:\s+(\d+) kB/m
const VM_HWM = /^VmHWM:\s+(\d+) kB/m

/** Starts the process's peak resident memory (VmHWM) again from its current RSS (Linux 4.0+), so that a peak is one run's. */
export function resetPeak (pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5')
}

/** Resident and peak resident memory of a process (Linux), in bytes. */
export function memoryOf (pid: number): { rss: number, peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const bytes = (field: RegExp): number => Number(field.exec(status)?.[1] ?? 0) * 1024
  return { rss: bytes(VM_RSS), peak: bytes(VM_HWM) }
}
