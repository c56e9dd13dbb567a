import { type Heap, startAllInOne, whileSampling } from './child.js'
import { makeDevices, type BenchPlatform } from './setup.js'
import type { LoadResult } from './soak-load.js'
import { progress, round, runScript } from './stats.js'

export interface SoakFigures {
  /** minutes of load asked for (SOAK_MINUTES) and run */
  minutes: number
  /** node's flags of `pnpm start` (package.json), which the platform ran with */
  nodeArgs: string
  httpDevices: number
  mqttKits: number
  /** both kinds of load at once, as fast as the platform answers */
  capacity: { seconds: number, httpPostsPerSecond: number, mqttMessagesPerSecond: number, valuesPerSecond: number }
  /** what the soak sent: half of each capacity */
  load: { seconds: number, httpPostsPerSecond: number, mqttMessagesPerSecond: number, valuesPerSecond: number, failures: number, lateTicks: number }
  /** RSS of the platform process, started and idle, before any load */
  startRssMb: number
  startHeapMb: Heap
  /** RSS at the end of each minute of load */
  minuteRssMb: number[]
  /** V8's heap in use and reserved, and memory outside it (Buffers), at the same moments (/metrics) */
  minuteHeapMb: Heap[]
  /** the highest RSS the kernel saw (VmHWM), over the whole run */
  peakRssMb: number
  /** RSS when the load stopped, and after the platform sat idle for `idleSeconds` */
  endRssMb: number
  afterRssMb: number
  idleSeconds: number
}

/**
 * Case 6, the soak: `pnpm start` as a process of its own on the bench's database (so its RSS is the
 * platform's alone: api, ingest, exporter and the embedded broker), its ingest capacity measured
 * briefly (kits posting 12 sensors over HTTP and publishing raw readings at QoS 1 over MQTT, both
 * at once), then both at half that rate for SOAK_MINUTES (2 by default, seconds under --quick),
 * sampling the process's VmRSS every second and its VmHWM at the end; then idle, to see what it
 * gives back. The heap figures (used and reserved) come from its /metrics.
 */
export async function benchSoak (p: BenchPlatform, quick: boolean): Promise<SoakFigures> {
  const minutes = quick ? 5 / 60 : Number(process.env.SOAK_MINUTES ?? 2)
  const httpDevices = await makeDevices(p.database, p.userId, quick ? 2 : 16)
  const kitIds = await makeDevices(p.database, p.userId, quick ? 2 : 50)
  const kitTokens = (await p.database.sql<{ device_token: string }[]>`
    update devices set device_token = to_hex(12582912 + id) where id = any(${kitIds}::int[]) returning device_token`).map((r) => r.device_token)
  const child = await startAllInOne(p)
  try {
    const { base, mqttUrl } = child
    await new Promise((resolve) => setTimeout(resolve, quick ? 500 : 5000))
    const startRss = child.memory().rss
    const startHeap = await child.heap()
    await child.snapshot()
    progress(`soak: started and idle, RSS ${startRss} MB, heap ${startHeap.used} of ${startHeap.total} MB, external ${startHeap.external} MB`)
    // Readings a second apart per kit, from three days back: a 30-minute soak at a hundred a second per kit stays in the past.
    const start = Math.floor(Date.now() / 1000) * 1000 - 3 * 86_400_000
    const load = { base, token: p.token, devices: httpDevices, mqttUrl, kitTokens }
    const capacitySeconds = quick ? 2 : 15
    progress(`soak: capacity, ${httpDevices.length} devices over HTTP and ${kitTokens.length} kits over MQTT at once for ${capacitySeconds} s`)
    const full = await runScript<LoadResult>('soak-load.ts', { ...load, mode: 'capacity', seconds: capacitySeconds, httpRate: 0, mqttRate: 0, start }, 'the soak load (capacity)')
    const httpRate = full.httpPosts / full.seconds / 2
    const mqttRate = full.mqttMessages / full.seconds / 2
    progress(`soak: ${round(minutes, 2)} minutes at ${Math.round(httpRate)} posts/s and ${Math.round(mqttRate)} messages/s`)
    const minuteRss: number[] = []
    const minuteHeap: Heap[] = []
    const t0 = performance.now()
    // Readings continue after the capacity run's, so that every one is new.
    const { result: sent, peak } = await whileSampling(child, async () => await runScript<LoadResult>('soak-load.ts', { ...load, mode: 'paced', seconds: minutes * 60, httpRate, mqttRate, start: start + 3_600_000 }, 'the soak load'), (_, rss) => {
      const minute = Math.floor((performance.now() - t0) / 60_000)
      if (minute <= minuteRss.length) return
      minuteRss.push(rss)
      const index = minuteHeap.length
      minuteHeap.push({ used: NaN, total: NaN, external: NaN })
      void child.heap().then((heap) => {
        minuteHeap[index] = heap
        progress(`soak: minute ${minute}, RSS ${rss} MB, peak ${child.memory().peak} MB, heap ${heap.used} of ${heap.total} MB, external ${heap.external} MB`)
      }, () => {})
    })
    const end = child.memory()
    // The load's own clock starts after t0, so its last minute may end before the sampler's: then
    // the last minute's figure is the one taken as the load stopped.
    if (minuteRss.length < Math.floor(minutes)) {
      minuteRss.push(end.rss)
      minuteHeap.push(await child.heap().catch(() => ({ used: NaN, total: NaN, external: NaN })))
    }
    const idleSeconds = quick ? 1 : 60
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000))
    const after = child.memory()
    await child.snapshot()
    const figures: SoakFigures = {
      minutes: round(minutes, 2),
      nodeArgs: child.nodeArgs,
      httpDevices: httpDevices.length,
      mqttKits: kitTokens.length,
      capacity: { seconds: round(full.seconds), httpPostsPerSecond: Math.round(full.httpPosts / full.seconds), mqttMessagesPerSecond: Math.round(full.mqttMessages / full.seconds), valuesPerSecond: Math.round((full.httpValues + full.mqttValues) / full.seconds) },
      load: { seconds: round(sent.seconds), httpPostsPerSecond: Math.round(sent.httpPosts / sent.seconds), mqttMessagesPerSecond: Math.round(sent.mqttMessages / sent.seconds), valuesPerSecond: Math.round((sent.httpValues + sent.mqttValues) / sent.seconds), failures: sent.failures + full.failures, lateTicks: sent.lateTicks },
      startRssMb: startRss,
      startHeapMb: startHeap,
      minuteRssMb: minuteRss,
      minuteHeapMb: minuteHeap,
      peakRssMb: Math.max(peak, after.peak),
      endRssMb: end.rss,
      afterRssMb: after.rss,
      idleSeconds
    }
    progress(`soak: ${JSON.stringify(figures)}`)
    return figures
  } finally {
    await child.stop()
  }
}
