import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import { apiService } from '@esp/api'
import { binaryReadings, ChangeFeed, createDatabase, type Database, dropDatabase, loadEngine, migrateDatabase, postgresRunner, READINGS_COPY_TARGET, type ReadingRow, ReadingsWriter, seedCatalogue, startEmbeddedPostgres, ensureDatabase } from '@esp/db'
import { ingestReadings, systemClock } from '@esp/domain'
import { ensureExplorerBuilt, explorerDist } from '@esp/explorer'
import { buildServer } from '@esp/http'
import { exporterService } from '@esp/exporter'
import { ingestService } from '@esp/ingest'
import { progress } from './stats.js'

export interface BenchPlatform {
  database: Database
  app: FastifyInstance
  base: string
  /** the embedded broker of ingest */
  mqttUrl: string
  token: string
  userId: number
  /** what a service started on its own needs to accept the bench's token */
  jwtSecret: string
  dataDir: string
  close: () => Promise<void>
}

/**
 * The platform as `pnpm start` runs it (api, ingest and exporter on one server, real HTTP on loopback), on
 * the embedded PostgreSQL (durable, as in use) or DATABASE_URL, in a database of its own.
 */
export async function startPlatform (externalUrl: string | undefined): Promise<BenchPlatform> {
  let dir: string | undefined
  let stop: (() => Promise<void>) | undefined
  let url: string
  const name = `esp_bench_${process.pid}`
  if (externalUrl === undefined || externalUrl === '') {
    dir = mkdtempSync(path.join(tmpdir(), 'esp-bench-'))
    chmodSync(dir, 0o755)
    progress('starting the embedded PostgreSQL')
    const server = await startEmbeddedPostgres({ dataDir: dir })
    stop = server.stop
    await ensureDatabase(server.adminUrl, name)
    url = server.url.replace(/\/esp$/, `/${name}`)
  } else {
    const admin = new URL(externalUrl)
    await ensureDatabase(externalUrl, name)
    admin.pathname = `/${name}`
    url = admin.toString()
  }
  await migrateDatabase(url)
  const database = createDatabase(url, { max: 20, applicationName: 'esp-bench' })
  await seedCatalogue(database)
  const changes = new ChangeFeed(database)
  await changes.start()
  const jwtSecret = 'bench-secret-bench-secret-bench-secret!!'
  const app = await buildServer({
    title: 'bench',
    logLevel: 'warn',
    bodyLimit: 50 * 1024 * 1024,
    trustProxy: false,
    publicUrl: undefined,
    vendor: 'smartcitizen',
    versionGit: 'bench',
    ready: async () => null,
    auth: { database, jwtSecret, clock: systemClock, changes },
    // On, as in production, with a limit configured for the run: the reads case sends anonymous
    // traffic from one address far above the platform's default of 90 a minute.
    rateLimit: { perMinute: 100_000_000 }
  })
  // The explorer as `pnpm start` serves it (case 7 loads it in a browser); built only when its sources changed.
  if (await ensureExplorerBuilt()) progress('built the explorer')
  await app.register(apiService, { database, dataDir: dir ?? tmpdir(), accessTokenTtlSeconds: 86_400, passwordResetTtlSeconds: 3600, uploadMaxBytes: 1024 * 1024, uploadSecret: 'x', explorer: { dir: explorerDist } })
  await app.register(ingestService, { database, maxValues: 1_000_000, maxFutureSeconds: 86_400, mqtt: { host: '127.0.0.1', port: 0, explicit: true } })
  // All three services, as `pnpm start` runs them: case 6 reads this process's memory.
  await app.register(exporterService, { database, dataDir: dir ?? tmpdir(), mailFrom: 'bench <bench@localhost>', schedules: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  // An admin is not rate limited (contract: Limits), as a fleet operator's account would be.
  await fetch(`${base}/v0/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'bench', email: 'bench@example.org', password: 'bench password' }) })
  const [user] = await database.sql<{ id: number }[]>`update users set role = 'admin' where username = 'bench' returning id`
  const session = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'bench', password: 'bench password' }) })
  const { access_token: token } = await session.json() as { access_token: string }
  return {
    database,
    app,
    base,
    token,
    userId: user?.id ?? 0,
    jwtSecret,
    dataDir: dir ?? tmpdir(),
    mqttUrl: `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`,
    close: async () => {
      await app.close()
      await database.close()
      // On a server of one's own, the bench's database (gigabytes after the rollups case) goes too.
      if (externalUrl !== undefined && externalUrl !== '') await dropDatabase(externalUrl, name)
      await stop?.()
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Rows committed as the write path copies them (binary COPY in a transaction) and nothing else:
 * what the bare baselines of cases 1 and 2 do with what they receive.
 */
export async function copyRows (database: Database, rows: readonly ReadingRow[]): Promise<void> {
  await database.sql.begin(async (tx) => { await postgresRunner(tx).copyBinary?.(READINGS_COPY_TARGET, binaryReadings(rows)) })
}

export async function makeDevices (database: Database, ownerId: number, count: number): Promise<number[]> {
  const rows = await database.sql<{ id: number }[]>`
    insert into devices (owner_id, name, kit_id) select ${ownerId}, 'bench ' || g, 26 from generate_series(1, ${count}) g returning id`
  return rows.map((r) => r.id)
}

/** One timestamp of a device's readings, as a kit posts it. */
export interface TimedReadings { recorded_at: string, sensors: { id: number, value: number }[] }

/**
 * `count` timestamps of a public kit's readings (`item(i)` makes the i-th) written through the write
 * path in batches, so that the rollup tiers fill as in use, then settled as autovacuum and the
 * checkpointer would by the time anyone reads them. Returns the seconds the writing took.
 */
export async function writeReadings (p: BenchPlatform, device: number, count: number, now: Date, item: (i: number) => TimedReadings): Promise<number> {
  const engine = await loadEngine(postgresRunner(p.database.sql))
  const ctx = { database: p.database, writer: new ReadingsWriter(p.database, engine), now: () => now, limits: { maxValues: 1_000_000, maxFutureMs: 86_400_000, minTime: new Date(0) } }
  const t0 = performance.now()
  const batch = 20_000
  for (let i = 0; i < count; i += batch) {
    const data = Array.from({ length: Math.min(batch, count - i) }, (_, k) => item(i + k))
    await ingestReadings(ctx, { id: device, kitId: 26, ownerId: p.userId, isPrivate: false, forwardingToken: null }, data)
  }
  const seconds = (performance.now() - t0) / 1000
  // As autovacuum would by then: statistics and the visibility map that index-only scans use, and
  // the native tiers' dead versions gone (every batch of the load updated their rows again).
  await p.database.sql.unsafe(engine.name === 'native' ? 'vacuum analyze readings, readings_hourly, readings_daily, readings_daily_offset' : 'vacuum analyze readings')
  // The load's dirty pages written out now rather than by the checkpointer while the clock runs.
  await p.database.sql`checkpoint`
  return seconds
}
