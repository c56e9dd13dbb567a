import path from 'node:path'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type Database, historyRunner } from '@esp/db'
import { archiveDir, archiveLinkSecret, type Clock, Device, ensureAdmin, exportLinkSecret, OLDEST_READING, RepresentationCache, systemClock, UploadStore, User, WorldMap } from '@esp/domain'
import { createBoss, ensureQueues, sendJob } from '@esp/jobs'
import type { ApiContext } from './context.js'
import { applicationRoutes } from './routes/v0/applications.js'
import { meRoutes } from './routes/v0/me.js'
import { passwordResetRoutes } from './routes/v0/password-resets.js'
import { rootRoutes } from './routes/v0/root.js'
import { sessionRoutes } from './routes/v0/sessions.js'
import { uploadRoutes } from './routes/v0/uploads.js'
import { userRoutes } from './routes/v0/users.js'
import { readingHistoryRoutes } from './routes/v0/readings.js'
import { areaRoutes } from './routes/v0/area.js'
import { deviceRoutes } from './routes/v0/devices.js'
import { catalogueRoutes } from './routes/v0/catalogue.js'
import { experimentRoutes } from './routes/v0/experiments.js'
import { searchRoutes } from './routes/v0/search.js'
import { exportRoutes } from './routes/v0/exports.js'
import { explorerRoutes, type ExplorerOptions } from './explorer.js'
import { installReadRouting } from './read-routing.js'

export interface ApiDeps {
  database: Database
  dataDir: string
  accessTokenTtlSeconds: number
  passwordResetTtlSeconds: number
  uploadMaxBytes: number
  uploadSecret: string
  maxBuckets?: number
  /** the representations kept per process, at most this many bytes (READ_CACHE_MB) */
  readCacheBytes?: number
  admin?: { username: string, email: string, password: string } | undefined
  clock?: Clock
  /** signs CSV archive links; the exporter must use the same (archiveLinkSecret of the platform secret) */
  archiveLinkSecret?: string
  /** signs the short-lived links of a device's streamed export (exportLinkSecret of the platform secret); replicas must share it */
  exportLinkSecret?: string
  /** how far ahead of the clock an imported reading may be (READINGS_MAX_FUTURE_SECONDS) */
  readingsMaxFutureSeconds?: number
  /** the largest CSV import body (CSV_IMPORT_MAX_BYTES) */
  csvImportMaxBytes?: number
  /** streamed exports running at once per process, each on a connection of its own (EXPORT_MAX_CONCURRENT) */
  exportMaxConcurrent?: number
  /** streamed exports at once per caller (EXPORT_MAX_PER_ANONYMOUS, _CITIZEN, _RESEARCHER) */
  exportMaxPerCaller?: { anonymous: number, citizen: number, researcher: number }
  /** an export whose client takes no bytes this long is stopped (EXPORT_IDLE_SECONDS) */
  exportIdleSeconds?: number
  /** the longest any export runs (EXPORT_MAX_SECONDS) */
  exportMaxSeconds?: number
  /** the built explorer, served at /explorer/; browsers asking for / are sent there */
  explorer?: ExplorerOptions | undefined
  /** streaming replicas for anonymous reads (DATABASE_READ_URL); without them everything reads `database` */
  readReplicas?: { urls: readonly string[], maxLagSeconds: number, pollIntervalMs?: number } | undefined
}

/**
 * Everything people and apps call, except posting readings (DESIGN.md). Routes live under /v0;
 * shared schemas are added at the top so the OpenAPI document resolves them.
 */
export const apiService = fp(async (app: FastifyInstance, deps: ApiDeps) => {
  // The api only produces jobs: no maintenance loops here; the exporter runs those.
  const boss = createBoss({ url: deps.database.url, producerOnly: true, max: 2, onError: (err) => { app.log.error({ err, component: 'jobs' }, 'job queue error') } })
  await boss.start()
  await ensureQueues(boss, deps.database)
  app.addHook('onClose', async () => { await boss.stop({ graceful: false, wait: true }) })

  if (deps.admin !== undefined) await ensureAdmin(deps.database, deps.admin)

  const ctx: ApiContext = {
    database: deps.database,
    history: historyRunner(deps.database),
    send: async (tx, key, payload) => { await sendJob(boss, tx, key, payload) },
    clock: deps.clock ?? systemClock,
    worldMap: new WorldMap(deps.database, deps.clock ?? systemClock),
    representations: new RepresentationCache(deps.readCacheBytes ?? 64 * 2 ** 20),
    uploads: new UploadStore(path.join(path.resolve(deps.dataDir), 'uploads')),
    settings: {
      accessTokenTtlSeconds: deps.accessTokenTtlSeconds,
      passwordResetTtlSeconds: deps.passwordResetTtlSeconds,
      uploadMaxBytes: deps.uploadMaxBytes,
      uploadSecret: deps.uploadSecret,
      maxBuckets: deps.maxBuckets ?? 50_000,
      readCacheBytes: deps.readCacheBytes ?? 64 * 2 ** 20
    }
  }
  // Before the routes: it wraps the handlers of the routes a replica may serve.
  await installReadRouting(app, {
    primary: deps.database,
    primarySource: { database: deps.database, history: ctx.history, worldMap: ctx.worldMap, replica: undefined },
    urls: deps.readReplicas?.urls ?? [],
    maxLagSeconds: deps.readReplicas?.maxLagSeconds ?? 5,
    pollIntervalMs: deps.readReplicas?.pollIntervalMs,
    clock: ctx.clock
  })
  app.addSchema(Device)
  app.addSchema(User)
  await app.register(async (v0) => {
    await v0.register(rootRoutes, { explorer: deps.explorer !== undefined })
    await v0.register(sessionRoutes, ctx)
    await v0.register(userRoutes, ctx)
    await v0.register(meRoutes, ctx)
    await v0.register(passwordResetRoutes, ctx)
    await v0.register(applicationRoutes, ctx)
    await v0.register(uploadRoutes, ctx)
    await v0.register(deviceRoutes, ctx)
    await v0.register(readingHistoryRoutes, ctx)
    await v0.register(areaRoutes, ctx)
    await v0.register(catalogueRoutes, ctx)
    await v0.register(experimentRoutes, ctx)
    await v0.register(searchRoutes, ctx)
    await v0.register(exportRoutes, {
      ...ctx,
      exports: {
        linkSecret: deps.archiveLinkSecret ?? archiveLinkSecret(deps.uploadSecret),
        exportLinkSecret: deps.exportLinkSecret ?? exportLinkSecret(deps.uploadSecret),
        archiveDir: archiveDir(deps.dataDir),
        importLimits: { maxFutureMs: (deps.readingsMaxFutureSeconds ?? 86_400) * 1000, minTime: OLDEST_READING },
        importMaxBytes: deps.csvImportMaxBytes ?? 16 * 1024 * 1024,
        slots: {
          maxConcurrent: deps.exportMaxConcurrent ?? 4,
          perAnonymous: deps.exportMaxPerCaller?.anonymous ?? 1,
          perCitizen: deps.exportMaxPerCaller?.citizen ?? 2,
          perResearcher: deps.exportMaxPerCaller?.researcher ?? 3
        },
        timeouts: { idleMs: (deps.exportIdleSeconds ?? 30) * 1000, maxMs: (deps.exportMaxSeconds ?? 1800) * 1000 }
      }
    })
  }, { prefix: '/v0' })
  if (deps.explorer !== undefined) await app.register(explorerRoutes, deps.explorer)
}, { name: 'esp-api' })
