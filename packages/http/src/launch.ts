import type { FastifyInstance } from 'fastify'
import closeWithGrace from 'close-with-grace'
import type { Static } from '@sinclair/typebox'
import type { AuthConfig, DbConfig, HttpConfig, LogConfig, RateLimitConfig, UploadConfig } from '@esp/config'
import { ChangeFeed, migrationStatus, openPlatformDatabase, type PlatformDatabase } from '@esp/db'
import { listenWithFallback } from './listen.js'
import { processApplicationName } from './metrics.js'
import { buildServer, DOCS_PATH, EXPLORER_PATH } from './server.js'
import { DatabaseHealth } from './database-health.js'
import { detectVersion } from './version.js'
import { jwtSecret } from './secrets.js'
import { CATALOGUE_TOPIC, referenceData, rollupTimeZoneOffsets, systemClock } from '@esp/domain'

export type LaunchConfig = Static<typeof DbConfig> & Static<typeof HttpConfig> & Static<typeof LogConfig> &
  Static<typeof AuthConfig> & Static<typeof RateLimitConfig> & Partial<Static<typeof UploadConfig>>

export interface LaunchContext<C extends LaunchConfig> {
  config: C
  /** keys the environment set explicitly */
  explicit: ReadonlySet<string>
}

export interface RegisterContext<C extends LaunchConfig> extends LaunchContext<C> {
  /** the signing secret (JWT_SECRET or the one kept in DATA_DIR) */
  secret: string
}

export interface LaunchOptions<C extends LaunchConfig> extends LaunchContext<C> {
  title: string
  applicationName: string
  register: (app: FastifyInstance, database: PlatformDatabase, context: RegisterContext<C>) => Promise<void>
  /** lines printed after the HTTP address, e.g. the MQTT address */
  describe?: (app: FastifyInstance, context: LaunchContext<C>) => string[]
}

export interface Launched {
  app: FastifyInstance
  database: PlatformDatabase
  url: string
}

/**
 * Runs a service (or all of them): database (embedded when DATABASE_URL is unset), server,
 * listen with the port rules of DESIGN.md, and a graceful close on SIGTERM/SIGINT.
 */
export async function launch<C extends LaunchConfig> (options: LaunchOptions<C>): Promise<Launched> {
  const { config } = options
  const applicationName = processApplicationName(options.applicationName)
  const database = await openPlatformDatabase({
    url: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolMax: config.DATABASE_POOL_MAX,
    applicationName,
    engine: config.TS_ENGINE,
    dayOffsetsMs: rollupTimeZoneOffsets(config.ROLLUP_TIME_ZONES),
    log: (message) => { if (config.LOG_LEVEL !== 'silent') console.log(message) }
  })
  let app: FastifyInstance | undefined
  // Logged through the server's logger once there is one; the first change can only come later.
  let log: ((available: boolean, reason: string) => void) | undefined
  const databaseHealth = new DatabaseHealth(database, { onChange: (available, reason) => { log?.(available, reason) } })
  // One per process: caches subscribe to it (see packages/db/src/changes.ts).
  const changes = new ChangeFeed(database, (err) => { app?.log.warn({ err }, 'change feed') })
  // A write to the reference data anywhere reloads it here ahead of the next request.
  changes.subscribe(CATALOGUE_TOPIC, referenceData(database).subscriber((err) => { app?.log.warn({ err }, 'reference data reload') }))
  try {
    const secret = await jwtSecret(config)
    app = await buildServer({
      title: options.title,
      logLevel: config.LOG_LEVEL,
      bodyLimit: config.BODY_LIMIT_BYTES,
      defaultBodyLimit: config.BODY_LIMIT_DEFAULT_BYTES,
      timeouts: { headersMs: config.HEADERS_TIMEOUT_SECONDS * 1000, requestMs: config.REQUEST_TIMEOUT_SECONDS * 1000 },
      trustProxy: config.TRUST_PROXY,
      publicUrl: config.PUBLIC_URL,
      vendor: config.API_VENDOR,
      versionGit: detectVersion(config.VERSION_GIT),
      auth: {
        database,
        jwtSecret: secret,
        clock: systemClock,
        redisUrl: config.REDIS_URL,
        changes,
        throttle: {
          accountFailures: config.AUTH_FAILURES_PER_ACCOUNT,
          addressFailures: config.AUTH_FAILURES_PER_ADDRESS,
          windowSeconds: config.AUTH_FAILURE_WINDOW_SECONDS,
          lockoutSeconds: config.AUTH_LOCKOUT_SECONDS,
          maxLockoutSeconds: Math.max(config.AUTH_LOCKOUT_MAX_SECONDS, config.AUTH_LOCKOUT_SECONDS),
          deviceFailures: config.AUTH_FAILURES_PER_DEVICE,
          trustSeconds: config.AUTH_TRUST_SECONDS
        }
      },
      rateLimit: { perMinute: config.RATE_LIMIT_PER_MINUTE, redisUrl: config.REDIS_URL },
      uploadMaxBytes: config.UPLOAD_MAX_BYTES ?? 5 * 1024 * 1024,
      credentialedOrigins: config.CORS_ORIGINS === '' ? [] : config.CORS_ORIGINS.split(','),
      metrics: { token: config.METRICS_TOKEN, pool: { database, max: config.DATABASE_POOL_MAX, applicationName } },
      pressure: {
        maxEventLoopDelayMs: config.PRESSURE_MAX_EVENT_LOOP_DELAY_MS,
        maxDbWaitMs: config.PRESSURE_MAX_DB_WAIT_MS,
        retryAfterSeconds: config.PRESSURE_RETRY_AFTER_SECONDS,
        database
      },
      databaseHealth,
      ready: async () => {
        const status = await migrationStatus(database)
        return status.applied >= status.expected ? null : `database not migrated: ${status.applied} of ${status.expected} migrations applied`
      }
    })
    const serverLog = app.log
    log = (available, reason) => {
      if (available) serverLog.info({ reason }, 'the database is available again')
      else serverLog.warn({ reason }, 'the database is unavailable: requests get 503 until it is back')
    }
    await options.register(app, database, { ...options, secret })
    // Listening before serving; database.close() ends the listening connection with the pool.
    await changes.start()
    const server = app
    const { port, fellBack } = await listenWithFallback(async (p) => {
      await server.listen({ port: p, host: config.HOST })
      const address = server.server.address()
      return typeof address === 'object' && address !== null ? address.port : p
    }, { port: config.PORT, explicit: options.explicit.has('PORT'), name: 'HTTP', key: 'PORT' })
    const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? 'localhost' : config.HOST
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
    const lines = [
      `${options.title} is up`,
      ...(server.hasRoute({ method: 'GET', url: `${EXPLORER_PATH}/*` }) ? [`  explorer  ${url}${EXPLORER_PATH}/`] : []),
      `  HTTP      ${url}/v0/${fellBack ? `   (port ${config.PORT} was busy)` : ''}`,
      ...(options.describe?.(server, options) ?? []),
      `  API docs  ${url}${DOCS_PATH}`,
      `  database  ${database.embedded ? `embedded PostgreSQL under ${config.DATA_DIR}` : 'DATABASE_URL'}`
    ]
    console.log(lines.join('\n'))
    // SIGTERM: the listener closes at once; requests in flight (and the one each open keep-alive
    // connection may still carry) finish and are answered, so every acknowledged reading is
    // committed; onClose hooks then stop the broker and pg-boss (running jobs finish), and the
    // pools close last. Past SHUTDOWN_TIMEOUT_SECONDS the process exits 1.
    closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_SECONDS * 1000 }, async ({ err, signal }) => {
      if (err !== undefined) server.log.error({ err }, 'closing after an error')
      else server.log.info({ signal }, 'closing')
      await server.close()
      await database.close()
      server.log.info('closed')
    })
    return { app: server, database, url }
  } catch (err) {
    await app?.close()
    await database.close()
    throw err
  }
}
