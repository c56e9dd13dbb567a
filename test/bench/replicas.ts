import type { FastifyInstance } from 'fastify'
import { tmpdir } from 'node:os'
import { apiService, type ApiDeps } from '@esp/api'
import { createDatabase, type Database, loadEngine, postgresRunner, ReadingsWriter } from '@esp/db'
import { ingestReadings, systemClock } from '@esp/domain'
import { buildServer } from '@esp/http'
import { startStreamingPair } from '@esp/test-helpers/pg-replica'
import { percentile, progress, round, runScript } from './stats.js'

interface Load { requests: number, failures: number, seconds: number, latencies: number[] }

export interface LoadFigures { requestsPerSecond: number, p50: number, p99: number }

export interface ReplicaFigures {
  devices: number
  historyDevices: number
  readings: number
  urls: number
  concurrency: number
  seconds: number
  primaryOnly: LoadFigures
  withReplica: LoadFigures
  /** with one replica against the primary alone */
  ratio: number
  /** the mix's requests the replica served in the with-replica slices */
  replicaShare: number
}

const MINUTE = 60_000

/**
 * Read replicas (DATABASE_READ_URL): the api's anonymous read mix (device pages, a page of the
 * device list, a day of hourly and a month of daily history) against the primary alone, and with
 * one streaming replica added, in alternating slices of the same run. Both apis run in this
 * process on a primary and replica of their own (test/helpers/pg-replica.ts), so the figure is
 * only the database side's: on a machine of few cores the two servers share them.
 */
export async function benchReplicas (quick: boolean): Promise<ReplicaFigures> {
  const cleanups: Array<() => unknown> = []
  try {
    progress('replicas: starting a primary and a streaming replica')
    // Durable, as in use: the replica then also receives the hint bits the primary's vacuum set.
    const pair = await startStreamingPair({ teardown: (fn) => { cleanups.push(fn) } }, { durable: true })
    const open = (name: string): Database => {
      const database = createDatabase(pair.primaryUrl, { max: 20, applicationName: name })
      cleanups.push(database.close)
      return database
    }
    const database = open('esp-bench-replicas')
    const devices = quick ? 50 : 1000
    const historyDevices = quick ? 2 : 20
    const days = quick ? 3 : 30
    progress(`replicas: ${devices} devices with 12 latest values, ${days} days of 10-minute readings of two sensors for ${historyDevices} of them`)
    const owners = Math.ceil(devices / 5)
    await database.sql`insert into users (username, email) select 'fleet' || g, 'fleet' || g || '@example.org' from generate_series(1, ${owners}) g`
    const ids = (await database.sql<Array<{ id: number, owner_id: number }>>`
      with owners as (select row_number() over (order by id) - 1 as n, id from users where username like 'fleet%'),
      made as (
        insert into devices (owner_id, name, description, kit_id, latitude, longitude, exposure, state, city, country_code, last_reading_at)
        select owners.id, 'replica ' || g, 'a bench device', 26, 41 + g / 10000.0, 2 + g / 10000.0, 'outdoor', 'has_published', 'Barcelona', 'ES', now()
        from generate_series(1, ${devices}) g join owners on owners.n = (g - 1) / 5 returning id, owner_id),
      latest as (
        insert into latest_readings (device_id, sensor_id, recorded_at, value, raw_value)
        select made.id, s, now(), 20.5, 20.5 from made, unnest(array[10,14,53,55,56,58,87,88,89,112,113,114]) s returning device_id)
      select id, owner_id from made order by id`)
    await database.sql`insert into components (device_id, sensor_id) select device_id, sensor_id from latest_readings on conflict do nothing`

    const end = Date.UTC(2026, 10, 1)
    const start = end - days * 24 * 60 * MINUTE
    const engine = await loadEngine(postgresRunner(database.sql))
    const now = new Date(end + MINUTE)
    const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => now, limits: { maxValues: 1_000_000, maxFutureMs: 86_400_000, minTime: new Date(0) } }
    let readings = 0
    for (const { id, owner_id: ownerId } of ids.slice(0, historyDevices)) {
      const data = Array.from({ length: days * 24 * 6 }, (_, i) => ({ recorded_at: new Date(start + i * 10 * MINUTE).toISOString(), sensors: [{ id: 55, value: 20 + (i % 50) / 10 }, { id: 56, value: 50 + (i % 30) }] }))
      await ingestReadings(ctx, { id, kitId: 26, ownerId, isPrivate: false, forwardingToken: null }, data)
      readings += data.length * 2
    }
    await database.sql.unsafe(engine.name === 'native' ? 'vacuum analyze' : 'vacuum analyze readings')
    await database.sql`checkpoint`
    await pair.caughtUp()

    const to = new Date(end).toISOString()
    const dayFrom = new Date(end - 24 * 60 * MINUTE).toISOString()
    const monthFrom = new Date(start).toISOString()
    const paths: string[] = []
    for (let i = 0; i < historyDevices; i++) {
      const id = ids[i]?.id ?? 0
      const page = ids[(i * 37) % ids.length]?.id ?? 0
      paths.push(`/v0/devices/${page}`, `/v0/devices/${id}/readings?sensor_id=55&rollup=1h&from=${dayFrom}&to=${to}`,
        `/v0/devices/${ids[(i * 53 + 11) % ids.length]?.id ?? 0}`, `/v0/devices/${id}/readings?sensor_id=56&rollup=1d&from=${monthFrom}&to=${to}`)
      if (i % 4 === 0) paths.push(`/v0/devices?per_page=25&page=${1 + (i % 10)}`)
    }

    const serve = async (name: string, readReplicas: ApiDeps['readReplicas']): Promise<{ app: FastifyInstance, base: string }> => {
      const db = open(name)
      const app = await buildServer({
        title: name,
        logLevel: 'warn',
        bodyLimit: 1024 * 1024,
        trustProxy: false,
        publicUrl: undefined,
        vendor: 'smartcitizen',
        versionGit: 'bench',
        ready: async () => null,
        auth: { database: db, jwtSecret: 'bench-secret-bench-secret-bench-secret!!', clock: systemClock },
        rateLimit: { perMinute: 100_000_000 }
      })
      cleanups.push(async () => { await app.close() })
      await app.register(apiService, { database: db, dataDir: tmpdir(), accessTokenTtlSeconds: 3600, passwordResetTtlSeconds: 3600, uploadMaxBytes: 1024 * 1024, uploadSecret: 'x', readReplicas })
      await app.listen({ port: 0, host: '127.0.0.1' })
      const address = app.server.address()
      return { app, base: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}` }
    }
    const alone = await serve('esp-bench-primary-only', undefined)
    const replicated = await serve('esp-bench-with-replica', { urls: [pair.replicaUrl], maxLagSeconds: 5 })
    const served = async (): Promise<number> => {
      const text = (await replicated.app.inject({ url: '/metrics' })).body
      const line = text.split('\n').find((l) => l.startsWith('esp_db_replica_requests_total{'))
      return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
    }

    const concurrency = quick ? 2 : 16
    const seconds = quick ? 2 : 30
    const slices = quick ? 1 : 5
    progress(`replicas: ${concurrency} clients, ${paths.length} URLs in turn, ${seconds} s each side in ${slices} alternating slices`)
    const totals = [alone, replicated].map(() => ({ requests: 0, seconds: 0, latencies: [] as number[] }))
    let servedBefore = await served()
    let servedRequests = 0
    for (let i = 0; i < slices; i++) {
      for (let k = 0; k < 2; k++) {
        const index = (i + k) % 2
        const side = index === 0 ? alone : replicated
        const total = totals[index]
        if (total === undefined) continue
        const result = await runScript<Load>('load.ts', { urls: paths.map((p) => `${side.base}${p}`), headers: {}, concurrency, seconds: seconds / slices, raw: true }, 'the load generator')
        if (result.failures > 0) throw new Error(`replicas: ${result.failures} requests failed`)
        total.requests += result.requests
        total.seconds += result.seconds
        for (const latency of result.latencies) total.latencies.push(latency)
        if (index === 1) {
          const after = await served()
          servedRequests += after - servedBefore
          servedBefore = after
        }
      }
    }
    const figures = (t: { requests: number, seconds: number, latencies: number[] }): LoadFigures =>
      ({ requestsPerSecond: Math.round(t.requests / t.seconds), p50: round(percentile(t.latencies, 50)), p99: round(percentile(t.latencies, 99)) })
    const [primaryOnly, withReplica] = totals.map(figures) as [LoadFigures, LoadFigures]
    const replicatedTotal = totals[1]?.requests ?? 1
    return {
      devices,
      historyDevices,
      readings,
      urls: paths.length,
      concurrency,
      seconds,
      primaryOnly,
      withReplica,
      ratio: round(withReplica.requestsPerSecond / primaryOnly.requestsPerSecond, 3),
      // The load generator's warm-up requests are counted by the server too.
      replicaShare: round(Math.min(1, servedRequests / replicatedTotal), 3)
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}
