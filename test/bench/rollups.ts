import { rollupFunctions } from '@esp/domain'
import { makeDevices, type BenchPlatform, writeReadings } from './setup.js'
import { drain, httpGet, percentile, progress, round, timeRuns } from './stats.js'

export interface RollupFigure { rollup: string, range: string, fn: string, p50: number, p95: number }
export interface RollupFigures {
  sensors: number
  days: number
  /** readings of the device (timestamps x sensors) */
  values: number
  loadValuesPerSecond: number
  queries: RollupFigure[]
  raw1dP50: number
  http1dAvgP50: number
  speedup1d: number
}

const MINUTE = 60_000
// A kit's sensors (clients.md §1.3.1); 58 (pressure, values near 101325) is the one queried.
const SENSORS = [58, 10, 14, 53, 55, 56, 87, 88, 89, 112, 113, 220]

/**
 * Case 3: a device with 12 sensors and a year of 1-minute readings (written through the write
 * path, so tiers fill as in use); rollups of its pressure sensor through HTTP, p50 and p95; and
 * the same daily aggregation in plain SQL over the raw rows, timed the same way, for the speed-up.
 */
export async function benchRollups (p: BenchPlatform, quick: boolean): Promise<RollupFigures> {
  const [device = 0] = await makeDevices(p.database, p.userId, 1)
  const days = quick ? 14 : 365
  const end = Date.UTC(2026, 10, 1)
  const start = end - days * 24 * 60 * MINUTE
  const total = days * 24 * 60
  progress(`rollups: loading ${total} timestamps of ${SENSORS.length} sensors`)
  const loadSeconds = await writeReadings(p, device, total, new Date(end + MINUTE), (i) => ({
    recorded_at: new Date(start + i * MINUTE).toISOString(),
    sensors: SENSORS.map((id) => ({ id, value: id === 58 ? 101325 + 50 * Math.sin(i / 1440) + (i % 7) * 0.01 : id + (i % 100) / 10 }))
  }))

  const runs = quick ? 10 : 60
  const get = async (query: string): Promise<void> => { await drain(await httpGet(`${p.base}/v0/devices/${device}/readings?sensor_id=58&${query}`)) }
  const yearFrom = new Date(start).toISOString()
  const to = new Date(end).toISOString()
  const monthFrom = new Date(end - 30 * 24 * 60 * MINUTE).toISOString()
  const queries: RollupFigure[] = []
  for (const [rollup, from, range] of [['1d', yearFrom, `${days} days`], ['1h', monthFrom, '30 days'], ['7m', monthFrom, '30 days'], ['1w', monthFrom, '30 days'], ['1M', monthFrom, '30 days']] as const) {
    for (const fn of rollupFunctions) {
      const times = await timeRuns(runs, 20, async () => { await get(`rollup=${rollup}&function=${fn}&from=${from}&to=${to}`) })
      queries.push({ rollup, range, fn, p50: round(percentile(times, 50)), p95: round(percentile(times, 95)) })
    }
    progress(`rollups: ${rollup} done`)
  }
  const rawTimes = await timeRuns(quick ? 5 : 20, 2, async () => {
    await p.database.sql`
      select date_bin('1 day', recorded_at, '1970-01-01'), avg(value) from readings
      where device_id = ${device} and sensor_id = 58 and recorded_at >= ${yearFrom} and recorded_at <= ${to}
      group by 1 order by 1 desc`
  })
  const raw1dP50 = percentile(rawTimes, 50)
  const http1dAvgP50 = queries.find((q) => q.rollup === '1d' && q.fn === 'avg')?.p50 ?? NaN
  return {
    sensors: SENSORS.length,
    days,
    values: total * SENSORS.length,
    loadValuesPerSecond: Math.round(total * SENSORS.length / loadSeconds),
    queries,
    raw1dP50: round(raw1dP50),
    http1dAvgP50,
    speedup1d: round(raw1dP50 / http1dAvgP50, 1)
  }
}
