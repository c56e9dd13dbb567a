/**
 * The fleet simulator, in a process of its own so that building and sending requests does not
 * take event-loop time from the server it measures. Prints one JSON line with its timing.
 * Arguments: JSON {base, token, devices, batches, size, mode: 'batch500' | 'kit12', start}.
 */
import { httpPost } from './stats.js'

const SENSORS_12 = [10, 14, 53, 55, 56, 58, 87, 88, 89, 112, 113, 220]
const options = JSON.parse(process.argv[2] ?? '{}') as { base: string, token: string, devices: number[], batches: number, mode: 'batch500' | 'kit12', start: number }

const headers = { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' }

const body = (d: number, b: number): string => JSON.stringify({
  data: options.mode === 'batch500'
    ? Array.from({ length: 500 }, (_, i) => ({ recorded_at: new Date(options.start + (b * 500 + i) * 60_000).toISOString(), sensors: [{ id: SENSORS_12[d % SENSORS_12.length] ?? 55, value: 20 + Math.sin(i) }] }))
    : [{ recorded_at: new Date(options.start + b * 60_000).toISOString(), sensors: SENSORS_12.map((id) => ({ id, value: id + b / 10 })) }]
})
// Bodies are built before the clock starts: the figure is the platform's, not the simulator's.
// A few batches of earlier times go first, untimed, so that neither side is measured cold (the
// JIT, the connections, the caches): the platform's first requests would otherwise be its slowest.
const WARMUP = 3
const warmup = options.devices.map((_, d) => Array.from({ length: WARMUP }, (_, b) => body(d, b - WARMUP)))
const bodies = options.devices.map((_, d) => Array.from({ length: options.batches }, (_, b) => body(d, b)))
const post = async (bodiesOf: string[][]): Promise<void> => {
  await Promise.all(options.devices.map(async (device, d) => {
    for (const each of bodiesOf[d] ?? []) await httpPost(`${options.base}/v0/devices/${device}/readings`, headers, each)
  }))
}
await post(warmup)
const t0 = performance.now()
await post(bodies)
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000 }))
