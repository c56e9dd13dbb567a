// temporary experiment (not committed): rollup latency on a persistent local database
import http from 'node:http'
import { apiService } from '@esp/api'
import { createDatabase, migrateDatabase, seedCatalogue, ensureDatabase, loadEngine, postgresRunner } from '@esp/db'
import { systemClock, ingestReadings, ReadingsWriter } from '@esp/domain'
import { buildServer } from '@esp/http'
import { percentile, timeRuns } from '../test/bench/stats.js'

const url = 'postgres://postgres@127.0.0.1:5432/esp_rollprof'
const MINUTE = 60_000
const SENSORS = [58, 10, 14, 53, 55, 56, 87, 88, 89, 112, 113, 220]
const days = 365
const end = Date.UTC(2026, 10, 1)
const start = end - days * 24 * 60 * MINUTE
await ensureDatabase('postgres://postgres@127.0.0.1:5432/postgres', 'esp_rollprof')
await migrateDatabase(url)
const database = createDatabase(url, { max: 20, applicationName: 'rollprof' })
await seedCatalogue(database.sql)
let [dev] = await database.sql<{ id: number }[]>`select id from devices where name = 'rollprof'`
if (dev === undefined) {
  const [u] = await database.sql<{ id: number }[]>`insert into users (username, email, password_hash) values ('rp', 'rp@example.org', 'x') returning id`
  ;[dev] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name, kit_id) values (${u!.id}, 'rollprof', 26) returning id`
  const engine = await loadEngine(postgresRunner(database.sql))
  const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => new Date(end + MINUTE), limits: { maxValues: 1_000_000, maxFutureMs: 86_400_000, minTime: new Date(0) } }
  const total = days * 1440
  for (let i = 0; i < total; i += 20000) {
    const data = Array.from({ length: Math.min(20000, total - i) }, (_, k) => ({
      recorded_at: new Date(start + (i + k) * MINUTE).toISOString(),
      sensors: SENSORS.map((id) => ({ id, value: id === 58 ? 101325 + 50 * Math.sin((i + k) / 1440) + ((i + k) % 7) * 0.01 : id + ((i + k) % 100) / 10 }))
    }))
    await ingestReadings(ctx, { id: dev!.id, kitId: 26, ownerId: u!.id, isPrivate: false, forwardingToken: null }, data)
  }
  await database.sql`vacuum analyze readings`
}
const device = dev!.id
const app = await buildServer({
  title: 'bench', logLevel: 'warn', bodyLimit: 50 * 1024 * 1024, trustProxy: false, publicUrl: undefined, vendor: 'smartcitizen', versionGit: 'bench',
  ready: async () => null, auth: { db: database.db, jwtSecret: 'bench-secret-bench-secret-bench-secret!!', clock: systemClock }
})
await app.register(apiService, { database, dataDir: '/tmp', accessTokenTtlSeconds: 86_400, passwordResetTtlSeconds: 3600, uploadMaxBytes: 1024 * 1024, uploadSecret: 'x' })
const server: number[] = []
app.addHook('onResponse', async (_req, reply) => { server.push(reply.elapsedTime) })
await app.listen({ port: 0, host: '127.0.0.1' })
const port = (app.server.address() as { port: number }).port
const base = `http://127.0.0.1:${port}`
const agent = new http.Agent({ keepAlive: true })
const viaHttp = async (path: string): Promise<void> => await new Promise((resolve, reject) => {
  http.get(`${base}${path}`, { agent }, (res) => { res.resume(); res.on('end', () => resolve()) }).on('error', reject)
})
const viaFetch = async (path: string): Promise<void> => { const r = await fetch(`${base}${path}`); await r.arrayBuffer() }
const yearFrom = new Date(start).toISOString(); const to = new Date(end).toISOString(); const monthFrom = new Date(end - 30 * 1440 * MINUTE).toISOString()
const only = process.env.ONLY
for (const [label, q] of ([['1d year', `rollup=1d&function=avg&from=${yearFrom}&to=${to}`], ['7m month', `rollup=7m&function=avg&from=${monthFrom}&to=${to}`], ['1h month', `rollup=1h&function=max&from=${monthFrom}&to=${to}`]] as const).filter(([l]) => only === undefined || l.startsWith(only))) {
  for (const [how, fn] of [['fetch', viaFetch], ['http', viaHttp]] as const) {
    server.length = 0
    const times = await timeRuns(Number(process.env.RUNS ?? 100), 10, async () => { await fn(`/v0/devices/${device}/readings?sensor_id=58&${q}`) })
    const s = server.slice(10)
    const T = ((globalThis as any).__T ?? []).slice(10); (globalThis as any).__T = []
    const col = (i: number) => percentile(T.map((x: number[]) => x[i]), 50).toFixed(2)
    console.log('   phases p50: queries+fold', col(0), 'fold', col(1), 'finish', col(2))
    console.log(label.padEnd(9), how.padEnd(6), 'client p50', percentile(times, 50).toFixed(2), 'p95', percentile(times, 95).toFixed(2), '| server p50', percentile(s, 50).toFixed(2), 'p95', percentile(s, 95).toFixed(2))
  }
}
const raw = await timeRuns(10, 2, async () => { await database.sql`select date_bin('1 day', recorded_at, '1970-01-01'), avg(value) from readings where device_id = ${device} and sensor_id = 58 and recorded_at >= ${yearFrom} and recorded_at <= ${to} group by 1 order by 1 desc` })
console.log('raw 1d SQL p50', percentile(raw, 50).toFixed(1))
await app.close(); await database.close()
