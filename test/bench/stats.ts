import { spawn } from 'node:child_process'
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

/**
 * GET over node:http on a kept-alive connection; resolves with the response once it is a 200. The
 * bench's client shares the cores, or the very event loop, with the service it measures, and
 * fetch's web streams cost it several times what a plain socket read does.
 */
export async function httpGet (url: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return await new Promise<IncomingMessage>((resolve, reject) => {
    get(url, { agent: keepAlive, headers }, (res) => {
      if (res.statusCode === 200) { resolve(res); return }
      let body = ''
      res.on('data', (chunk: Buffer) => { body += chunk.toString() })
      res.on('end', () => { reject(new Error(`GET ${url}: ${res.statusCode ?? 0} ${body}`)) })
    }).on('error', reject)
  })
}

/**
 * POSTs `body` over node:http on a kept-alive connection, as httpGet, and resolves with the status
 * and the text of the response. A fleet of simulated devices costs the shared cores a fraction of
 * what fetch would take from the server it measures.
 */
export async function httpPost (url: string, headers: Record<string, string>, body: string): Promise<{ status: number, text: string }> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent: keepAlive, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (chunk: Buffer) => { parts.push(chunk) })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Reads a response to its end. */
export async function drain (res: IncomingMessage): Promise<void> {
  for await (const _ of res) { /* the bytes are not needed */ }
}
