import { readdirSync } from 'node:fs'
import { HTTP_LINE, repoRoot, startProcess, startScriptArgs } from '@esp/test-helpers/process'
import type { BenchPlatform } from './setup.js'
import { memoryOf, progress, round } from './stats.js'

const MQTT_LINE = /MQTT\s+mqtt:\/\/([\d.]+):(\d+)/
const METRICS_TOKEN = 'bench-metrics-token-bench'
export const MB = 2 ** 20

export interface Heap { used: number, total: number, external: number }

export interface ChildPlatform {
  base: string
  mqttUrl: string
  pid: number
  /** node's flags of `pnpm start` (package.json), which the process runs with */
  nodeArgs: string
  exited: () => boolean
  /** the process's VmRSS and VmHWM, in MB */
  memory: () => { rss: number, peak: number }
  /** V8's heap in use and reserved, and memory outside it (Buffers), in MB, from its /metrics */
  heap: () => Promise<Heap>
  /** a gauge of its /metrics (the event loop's delay gauges are since the last read) */
  gauge: (name: string) => Promise<number>
  /** with BENCH_HEAP_SNAPSHOTS=1, a heap snapshot (Heap.*.heapsnapshot in the repository's folder), written before this resolves */
  snapshot: () => Promise<void>
  stop: () => Promise<void>
}

/**
 * `pnpm start` (api, ingest, exporter and the embedded broker in one process) as a process of its
 * own on the bench's database, so that its memory is the platform's alone and not the bench's.
 * It takes the bench's token. BENCH_NODE_OPTIONS is passed to it as NODE_OPTIONS. With
 * BENCH_HEAP_SNAPSHOTS=1 the cases take heap snapshots where they read memory (SIGWINCH: SIGUSR2,
 * Node's usual one, is a request to stop for close-with-grace); writing one costs the process
 * memory of its own, so the RSS figures of such a run are not the platform's. BENCH_CPU_PROFILE=<dir>
 * has it write a CPU profile there when it stops.
 */
export async function startAllInOne (p: BenchPlatform, env: Record<string, string> = {}): Promise<ChildPlatform> {
  // Node refuses --cpu-prof in NODE_OPTIONS: BENCH_CPU_PROFILE=<dir> adds it to the process's flags.
  const profileDir = process.env.BENCH_CPU_PROFILE
  const nodeArgs = [...(profileDir !== undefined && profileDir !== '' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...startScriptArgs()]
  const snapshots = process.env.BENCH_HEAP_SNAPSHOTS === '1'
  const nodeOptions = [process.env.BENCH_NODE_OPTIONS, snapshots ? '--heapsnapshot-signal=SIGWINCH' : undefined].filter((o) => o !== undefined && o !== '').join(' ')
  const stops: Array<() => unknown> = []
  const platform = startProcess({ teardown: (fn) => { stops.push(fn) } }, 'scripts/start.ts', {
    PORT: '0', MQTT_PORT: '0', METRICS_TOKEN, DATABASE_URL: p.database.url, JWT_SECRET: p.jwtSecret, DATA_DIR: p.dataDir, LOG_LEVEL: 'warn', NODE_OPTIONS: nodeOptions === '' ? undefined : nodeOptions, ...env
  }, { nodeArgs })
  const stop = async (): Promise<void> => { for (const fn of stops) await fn() }
  try {
    const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
    const [, mqttHost, mqttPort] = await platform.waitFor(MQTT_LINE)
    const pid = platform.child.pid ?? 0
    progress(`pnpm start is pid ${pid}${nodeOptions === '' ? '' : ` (NODE_OPTIONS=${nodeOptions})`}`)
    const metrics = async (): Promise<string> => await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
    const exited = (): boolean => platform.child.exitCode !== null || platform.child.signalCode !== null
    return {
      base,
      mqttUrl: `mqtt://${mqttHost ?? ''}:${mqttPort ?? ''}`,
      pid,
      nodeArgs: nodeArgs.join(' '),
      exited,
      memory: () => {
        if (exited()) return { rss: NaN, peak: NaN }
        const { rss, peak } = memoryOf(pid)
        return { rss: round(rss / MB, 1), peak: round(peak / MB, 1) }
      },
      heap: async () => {
        const text = await metrics()
        const mb = (name: string): number => round(gaugeOf(text, name) / MB, 1)
        return { used: mb('nodejs_heap_size_used_bytes'), total: mb('nodejs_heap_size_total_bytes'), external: mb('nodejs_external_memory_bytes') }
      },
      gauge: async (name) => gaugeOf(await metrics(), name),
      snapshot: async () => {
        if (!snapshots || exited()) return
        const before = new Set(readdirSync(repoRoot).filter((f) => f.endsWith('.heapsnapshot')))
        process.kill(pid, 'SIGWINCH')
        // Written synchronously by the process; done when it answers again.
        while (readdirSync(repoRoot).every((f) => !f.endsWith('.heapsnapshot') || before.has(f))) await new Promise((resolve) => setTimeout(resolve, 200))
        await fetch(`${base}/health/live`)
        progress(`heap snapshot written: ${readdirSync(repoRoot).filter((f) => f.endsWith('.heapsnapshot') && !before.has(f)).join(', ')}`)
      },
      stop
    }
  } catch (err) {
    await stop()
    throw err
  }
}

const gaugeOf = (text: string, name: string): number => Number(new RegExp(`^esp_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)

/** Samples the process's RSS every second while `run` runs; the highest seen (and the kernel's VmHWM). */
export async function whileSampling<T> (child: ChildPlatform, run: () => Promise<T>, onSecond: (second: number, rss: number) => void = () => {}): Promise<{ result: T, peak: number }> {
  let peak = child.memory().rss
  const t0 = performance.now()
  const sampler = setInterval(() => {
    const { rss } = child.memory()
    if (Number.isNaN(rss)) return
    peak = Math.max(peak, rss)
    onSecond(Math.round((performance.now() - t0) / 1000), rss)
  }, 1000)
  try {
    const result = await run()
    return { result, peak: Math.max(peak, child.memory().peak) }
  } finally {
    clearInterval(sampler)
  }
}
