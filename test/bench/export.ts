import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { parquetMetadata } from 'hyparquet'
import { copyOut, loadEngine, postgresRunner } from '@esp/db'
import { PARQUET_ROW_GROUP } from '@esp/domain'
import { HTTP_LINE, repoRoot, startProcess } from '@esp/test-helpers/process'
import { makeDevices, type BenchPlatform } from './setup.js'
import { drain, httpGet, memoryOf, progress, resetPeak, round } from './stats.js'

export interface ExportRun { format: string, values: number, bytes: number, seconds: number, valuesPerSecond: number, peakRssMb: number }
export interface ExportFigures {
  sensors: number
  days: number
  values: number
  loadSeconds: number
  /** NODE_OPTIONS of the api process, as infra/compose.yaml sets them */
  nodeOptions: string
  /** RSS of the api process serving the exports, idle, before them */
  baselineRssMb: number
  csv: ExportRun
  ndjson: ExportRun
  /** one line per minute, a column per sensor */
  csvWide: ExportRun
  parquet: ExportRun & { rowGroups: number }
  /** the bare COPY of the same rows, read in-process: what PostgreSQL alone delivers */
  copy: ExportRun
  /** the same rows through the export across devices (GET /v0/readings/export), by time: its windows sorted */
  acrossDevices: { csv: ExportRun, parquet: ExportRun }
}

const MINUTE = 60_000

/**
 * Reads a stream to its end, counting bytes and lines (or keeping the bytes, for `keep`), while
 * sampling the serving process's RSS; its peak is this run's alone.
 */
async function measure (format: string, pid: number, open: () => Promise<AsyncIterable<Buffer>>, keep?: Buffer[]): Promise<Omit<ExportRun, 'values'> & { lines: number }> {
  resetPeak(pid)
  let peak = memoryOf(pid).rss
  const sampler = setInterval(() => { peak = Math.max(peak, memoryOf(pid).rss) }, 10)
  const t0 = performance.now()
  let bytes = 0
  let lines = 0
  try {
    for await (const chunk of await open()) {
      bytes += chunk.length
      if (keep !== undefined) keep.push(chunk)
      else for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
    }
  } finally {
    clearInterval(sampler)
  }
  const seconds = (performance.now() - t0) / 1000
  peak = Math.max(peak, memoryOf(pid).peak)
  return { format, bytes, lines, seconds: round(seconds), valuesPerSecond: 0, peakRssMb: round(peak / 2 ** 20, 1) }
}

/**
 * Case 5: the streamed export (GET /v0/devices/:id/readings/export) of a year of 1-minute
 * readings of 12 sensors over real HTTP, in CSV, NDJSON, the wide CSV and Parquet, with the bare
 * COPY as the baseline and today's CSV as the figure the new formats are held to.
 * The export is served by the api service as production runs it (built, plain node, a process of
 * its own), so the peak RSS is the serving process's and not the bench's or the loader's.
 * The rows are loaded with one INSERT … SELECT per month: this case measures reading, and the
 * write path has its own cases.
 */
export async function benchExport (p: BenchPlatform, quick: boolean): Promise<ExportFigures> {
  const [device = 0] = await makeDevices(p.database, p.userId, 1)
  const sql = p.database.sql
  const sensors = (await sql<{ id: number }[]>`select id from sensors order by id limit 12`).map((r) => r.id)
  const days = quick ? 7 : 365
  const end = Date.UTC(2026, 10, 1)
  const start = end - days * 24 * 60 * MINUTE
  const engine = await loadEngine(postgresRunner(sql))
  const months: Date[] = []
  for (let at = new Date(start); at.getTime() < end; at = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1))) months.push(at)
  await engine.prepare(postgresRunner(sql), [...months, new Date(end - 1)])
  progress(`export: loading ${days} days of 1-minute readings for ${sensors.length} sensors`)
  const t0 = performance.now()
  for (let from = start; from < end; from += 30 * 24 * 60 * MINUTE) {
    const to = Math.min(end, from + 30 * 24 * 60 * MINUTE)
    await sql`
      insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
      select ${device}, s, t, v, v
      from unnest(${sensors}::int[]) as s, generate_series(${new Date(from).toISOString()}::timestamptz, ${new Date(to - MINUTE).toISOString()}::timestamptz, interval '1 minute') as t,
        lateral (select round((20 + 10 * sin(extract(epoch from t) / 86400) + s / 7.0)::numeric, 2)::float8 as v) x`
  }
  // The components the write path would have added: the wide CSV's columns.
  await sql`insert into components (device_id, sensor_id) select ${device}, unnest(${sensors}::int[]) on conflict do nothing`
  const loadSeconds = (performance.now() - t0) / 1000
  await sql`vacuum analyze readings`
  const values = sensors.length * days * 24 * 60

  progress('export: building the services (pnpm build) and starting the api on its own')
  // The flags production runs the services with: the compose file's default, the one place they are set.
  const nodeOptions = /NODE_OPTIONS: \$\{NODE_OPTIONS:-([^}]*)\}/.exec(readFileSync(`${repoRoot}/infra/compose.yaml`, 'utf8'))?.[1] ?? ''
  execFileSync('pnpm', ['-s', 'build'], { cwd: repoRoot, stdio: 'inherit' })
  const stops: Array<() => unknown> = []
  const api = startProcess({ teardown: (fn) => { stops.push(fn) } }, 'services/api/dist/main.js', {
    PORT: '0', DATABASE_URL: p.database.url, JWT_SECRET: p.jwtSecret, DATA_DIR: p.dataDir, LOG_LEVEL: 'info', NODE_OPTIONS: nodeOptions
  })
  try {
    const base = (await api.waitFor(HTTP_LINE))[1] ?? ''
    const pid = api.child.pid ?? 0
    // Warm: the first request loads the route's code; what stays is the service at rest.
    await drain(await httpGet(`${base}/v0/devices/${device}/readings/export?format=csv&sensor_id=${sensors[0] ?? 0}&from=2026-10-31`, { authorization: `Bearer ${p.token}` }))
    const baselineRssMb = round(memoryOf(pid).rss / 2 ** 20, 1)
    const http = async (format: string, keep?: Buffer[], route = `/v0/devices/${device}/readings/export?`): Promise<ExportRun> => {
      progress(`export: ${format} over HTTP (${route})`)
      const run = await measure(format, pid, async () => await httpGet(`${base}${route}format=${format}`, { authorization: `Bearer ${p.token}` }), keep)
      // Each format's count of values: the Parquet footer's rows, a header line then a line a value, or a line a minute.
      const got = keep !== undefined
        ? Number(parquetMetadata(toArrayBuffer(keep)).num_rows)
        : format === 'csv_wide' ? (run.lines - 1) * sensors.length : run.lines - (format === 'csv' ? 1 : 0)
      if (got !== values) throw new Error(`export ${format}: ${got} values, expected ${values}`)
      return { format, values, bytes: run.bytes, seconds: run.seconds, valuesPerSecond: Math.round(values / run.seconds), peakRssMb: run.peakRssMb }
    }
    const csv = await http('csv')
    const ndjson = await http('ndjson')
    const csvWide = await http('csv_wide')
    const file: Buffer[] = []
    const parquet = { ...await http('parquet', file), rowGroups: parquetMetadata(toArrayBuffer(file)).row_groups.length }
    if (parquet.rowGroups !== Math.ceil(values / PARQUET_ROW_GROUP)) throw new Error(`export parquet: ${parquet.rowGroups} row groups of at most ${PARQUET_ROW_GROUP} rows for ${values} rows`)
    const across = `/v0/readings/export?device_ids=${device}&`
    const acrossFile: Buffer[] = []
    const acrossDevices = { csv: await http('csv', undefined, across), parquet: await http('parquet', acrossFile, across) }
    progress('export: bare COPY')
    const bare = await measure('copy', process.pid, async () => (await copyOut(p.database.url, `copy (select recorded_at, sensor_id, value from readings where device_id = ${device} order by sensor_id, recorded_at) to stdout`)).stream)
    const copy = { format: 'copy', values, bytes: bare.bytes, seconds: bare.seconds, valuesPerSecond: Math.round(values / bare.seconds), peakRssMb: bare.peakRssMb }
    return { sensors: sensors.length, days, values, loadSeconds: round(loadSeconds, 1), nodeOptions, baselineRssMb, csv, ndjson, csvWide, parquet, copy, acrossDevices }
  } catch (err) {
    // What the api said is the first thing to read when a download breaks.
    progress(`export: the api's output:\n${api.output().slice(-4000)}`)
    throw err
  } finally {
    for (const stop of stops) await stop()
  }
}

function toArrayBuffer (chunks: Buffer[]): ArrayBuffer {
  const whole = Buffer.concat(chunks)
  return whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.length) as ArrayBuffer
}
