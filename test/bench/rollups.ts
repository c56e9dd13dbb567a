import { registerDayOffsets } from '@esp/db'
import { rollupFunctions, rollupTimeZoneOffsets } from '@esp/domain'
import { makeDevices, type BenchPlatform, writeReadings } from './setup.js'
import { drain, httpGet, percentile, progress, round, timeRuns } from './stats.js'

export interface RollupFigure { rollup: string, range: string, fn: string, p50: number, p95: number }
export interface RollupFigures {
  sensors: number
  days: number
  /** readings of the device (timestamps x sensors) */
  values: number
  loadValuesPerSecond: number
  /** what the year of readings added to the database: rows, indexes and every tier (docs/deployment.md, growth) */
  storage: { bytes: number, bytesPerReading: number }
  queries: RollupFigure[]
  raw1dP50: number
  http1dAvgP50: number
  speedup1d: number
  /** 1d avg over the year on a zone's wall clock, timed alternately with the same request in UTC */
  zoned: { zone: string, p50: number, p95: number, utcP50: number, ratioToUtc: number, source: string }[]
  /** the 12 sensors at 1h over the month: one request (sensor_ids=all) against 12 one after another */
  severalSensors: { sensors: number, oneRequestP50: number, separateP50: number, ratio: number }
}

/**
 * The bench's deployment serves Madrid's days (ROLLUP_TIME_ZONES=Europe/Madrid): they come from
 * its offsets' daily tiers. New York's, not named there, from the hourly tier; Kolkata's (UTC+5:30)
 * from raw rows.
 */
const SERVED_ZONES = 'Europe/Madrid'
const ZONES = [
  { zone: 'Europe/Madrid', source: 'its daily tiers (ROLLUP_TIME_ZONES)' },
  { zone: 'America/New_York', source: 'hourly tier' },
  { zone: 'Asia/Kolkata', source: 'raw rows' }
]

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
  // As the platform does at start with ROLLUP_TIME_ZONES set; the writes below keep the tiers.
  await registerDayOffsets(p.database.sql, rollupTimeZoneOffsets(SERVED_ZONES))
  const days = quick ? 14 : 365
  const end = Date.UTC(2026, 10, 1)
  const start = end - days * 24 * 60 * MINUTE
  const total = days * 24 * 60
  progress(`rollups: loading ${total} timestamps of ${SENSORS.length} sensors`)
  const databaseBytes = async (): Promise<number> => Number((await p.database.sql`select pg_database_size(current_database())::bigint as n`)[0]?.n)
  const bytesBefore = await databaseBytes()
  const loadSeconds = await writeReadings(p, device, total, new Date(end + MINUTE), (i) => ({
    recorded_at: new Date(start + i * MINUTE).toISOString(),
    sensors: SENSORS.map((id) => ({ id, value: id === 58 ? 101325 + 50 * Math.sin(i / 1440) + (i % 7) * 0.01 : id + (i % 100) / 10 }))
  }))

  const storedBytes = await databaseBytes() - bytesBefore
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
  const zoned: RollupFigures['zoned'] = []
  for (const { zone, source } of ZONES) {
    // Alternating, so that both see the same machine: UTC, then the zone, run after run.
    const utcTimes: number[] = []
    const zoneTimes: number[] = []
    const year = `rollup=1d&function=avg&from=${yearFrom}&to=${to}`
    for (let i = 0; i < (quick ? 10 : 60) + 10; i++) {
      for (const [times, query] of [[utcTimes, year], [zoneTimes, `${year}&timezone=${zone}`]] as const) {
        const started = performance.now()
        await get(query)
        if (i >= 10) times.push(performance.now() - started)
      }
    }
    const utcP50 = percentile(utcTimes, 50)
    const p50 = percentile(zoneTimes, 50)
    zoned.push({ zone, source, p50: round(p50), p95: round(percentile(zoneTimes, 95)), utcP50: round(utcP50), ratioToUtc: round(p50 / utcP50) })
    progress(`rollups: 1d in ${zone} done`)
  }
  // Several sensors: one request for all 12 against the 12 requests one after another, alternately.
  const month = `rollup=1h&function=avg&from=${monthFrom}&to=${to}`
  const oneTimes: number[] = []
  const separateTimes: number[] = []
  for (let i = 0; i < (quick ? 5 : 30) + 5; i++) {
    let started = performance.now()
    await drain(await httpGet(`${p.base}/v0/devices/${device}/readings?sensor_ids=all&${month}`))
    if (i >= 5) oneTimes.push(performance.now() - started)
    started = performance.now()
    for (const sensor of SENSORS) await drain(await httpGet(`${p.base}/v0/devices/${device}/readings?sensor_id=${sensor}&${month}`))
    if (i >= 5) separateTimes.push(performance.now() - started)
  }
  const oneRequestP50 = percentile(oneTimes, 50)
  const separateP50 = percentile(separateTimes, 50)
  progress('rollups: several sensors done')
  return {
    severalSensors: { sensors: SENSORS.length, oneRequestP50: round(oneRequestP50), separateP50: round(separateP50), ratio: round(oneRequestP50 / separateP50) },
    sensors: SENSORS.length,
    days,
    values: total * SENSORS.length,
    loadValuesPerSecond: Math.round(total * SENSORS.length / loadSeconds),
    storage: { bytes: storedBytes, bytesPerReading: round(storedBytes / (total * SENSORS.length)) },
    queries,
    raw1dP50: round(raw1dP50),
    http1dAvgP50,
    speedup1d: round(raw1dP50 / http1dAvgP50, 1),
    zoned
  }
}
