import { Type } from '@sinclair/typebox'

const port = (fallback: number, what: string) =>
  Type.Integer({ minimum: 0, maximum: 65535, default: fallback, description: `a TCP port for ${what} (0 picks a free one)` })

/** Keys every service reads to reach its database and data folder. */
export const DbConfig = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://', description: 'a postgres:// URL' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 500, default: 10, description: 'an integer from 1 to 500' }),
  // Streaming replicas the api reads anonymous answers from; each gets a
  // pool of DATABASE_POOL_MAX. Unset: everything reads the primary.
  DATABASE_READ_URL: Type.Optional(Type.String({ pattern: '^ *postgres(ql)?://[^\\s,]+( *, *postgres(ql)?://[^\\s,]+)* *$', description: 'postgres:// URLs separated by commas' })),
  // The bound of a replica's staleness; the default matches the max-age of public answers.
  DATABASE_READ_MAX_LAG_SECONDS: Type.Integer({ minimum: 2, maximum: 3600, default: 5, description: 'an integer of seconds from 2 to 3600' }),
  DATA_DIR: Type.String({ minLength: 1, default: './.data', description: 'a folder path' }),
  TS_ENGINE: Type.Optional(Type.Union([Type.Literal('timescale'), Type.Literal('native')], { description: '"timescale" or "native"' })),
  // The zones whose local days get daily tiers of their own (issue 23): each costs a statement a write.
  ROLLUP_TIME_ZONES: Type.String({ pattern: '^([A-Za-z0-9_+./-]+(, *[A-Za-z0-9_+./-]+)*)?$', default: '', description: 'IANA time zone names separated by commas, e.g. Europe/Madrid,America/New_York' })
})

export const HttpConfig = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'an interface address' }),
  PORT: port(3000, 'HTTP'),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+[^/\\s]$', description: 'an absolute http(s) URL without a trailing slash' })),
  TRUST_PROXY: Type.Boolean({ default: false, description: 'true or false' }),
  CORS_ORIGINS: Type.String({ pattern: '^(https?://[^\\s,/]+(,https?://[^\\s,/]+)*)?$', default: '', description: 'comma-separated origins such as https://app.example.org' }),
  API_VENDOR: Type.String({ pattern: '^[a-z0-9.-]+$', default: 'smartcitizen', description: 'a lower-case vendor name' }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 5 * 1024 * 1024, description: 'an integer of bytes, at least 1024' }),
  // Bounded cost (issue 33): every route but bulk readings (and imports, uploads) takes a small body,
  // and a client gets a fixed time to send its request.
  BODY_LIMIT_DEFAULT_BYTES: Type.Integer({ minimum: 1024, default: 64 * 1024, description: 'an integer of bytes, at least 1024' }),
  HEADERS_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 600, default: 10, description: 'an integer of seconds from 1 to 600' }),
  REQUEST_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 30, description: 'an integer of seconds from 1 to 3600' }),
  VERSION_GIT: Type.Optional(Type.String({ description: 'a version string' })),
  // Production operation (issue 9): metrics access, backpressure thresholds, shutdown budget.
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16, description: 'a bearer token of at least 16 characters' })),
  PRESSURE_MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, default: 1000, description: 'milliseconds of mean event-loop delay (0 turns the check off)' }),
  PRESSURE_MAX_DB_WAIT_MS: Type.Integer({ minimum: 0, default: 2000, description: 'milliseconds a probe query may wait for the pool (0 turns the check off)' }),
  PRESSURE_RETRY_AFTER_SECONDS: Type.Integer({ minimum: 1, default: 10, description: 'seconds in Retry-After of a 503' }),
  SHUTDOWN_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, default: 10, description: 'seconds a graceful shutdown may take' })
})

export const MqttConfig = Type.Object({
  MQTT_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'an interface address' }),
  MQTT_PORT: port(1883, 'MQTT'),
  MQTT_BROKER_URL: Type.Optional(Type.String({ pattern: '^(mqtts?|wss?|tcp)://[^\\s]+$', description: 'an mqtt://, mqtts://, ws:// or wss:// URL' })),
  MQTT_CLIENT_ID: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._-]{1,60}$', description: 'letters, digits, dot, dash or underscore, at most 60' })),
  MQTT_SHARED_GROUP: Type.String({ pattern: '^[A-Za-z0-9._-]{1,60}$', default: 'esp-ingest', description: 'letters, digits, dot, dash or underscore, at most 60' }),
  MQTT_CONNECTIONS: Type.Integer({ minimum: 1, maximum: 64, default: 8, description: 'an integer from 1 to 64' }),
  // Clustered mode (issue 24): the nodes of a RabbitMQ cluster, comma-separated, tried in turn.
  BROKER_AMQP_URLS: Type.Optional(Type.String({ pattern: '^amqps?://[^\\s,]+(,amqps?://[^\\s,]+)*$', description: 'amqp:// or amqps:// URLs, comma-separated' })),
  BROKER_QUEUE: Type.String({ pattern: '^[A-Za-z0-9._-]{1,120}$', default: 'esp.ingest', description: 'letters, digits, dot, dash or underscore, at most 120' }),
  BROKER_PREFETCH: Type.Integer({ minimum: 1, maximum: 10000, default: 500, description: 'an integer from 1 to 10000' }),
  // The cluster's anonymous MQTT user (rabbitmq.conf mqtt.default_user): devices log in as it.
  BROKER_DEVICE_USER: Type.String({ pattern: '^[A-Za-z0-9._-]{1,60}$', default: 'device', description: 'letters, digits, dot, dash or underscore, at most 60' }),
  // The cluster's HTTP auth backend (issue 34): a listener of its own, never the public port;
  // the secret goes into rabbitmq.conf's auth_http URLs as userinfo, so it must be URL-safe.
  BROKER_AUTH_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'an interface address' }),
  BROKER_AUTH_PORT: port(3001, 'the broker auth backend'),
  BROKER_AUTH_SECRET: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._~-]{16,256}$', description: 'a URL-safe secret of 16 to 256 letters, digits, dot, underscore, tilde or dash' }))
})

export const LogConfig = Type.Object({
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'one of fatal, error, warn, info, debug, trace, silent' }
  )
})

export const AuthConfig = Type.Object({
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32, description: 'a secret of at least 32 characters' })),
  ACCESS_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 60, default: 30 * 24 * 3600, description: 'an integer of seconds, at least 60' }),
  PASSWORD_RESET_TTL_SECONDS: Type.Integer({ minimum: 60, default: 24 * 3600, description: 'an integer of seconds, at least 60' }),
  ADMIN_USERNAME: Type.Optional(Type.String({ minLength: 3, maxLength: 30, description: 'a username of 3 to 30 characters' })),
  ADMIN_EMAIL: Type.Optional(Type.String({ pattern: '^[^@\\s]+@[^@\\s]+$', description: 'an e-mail address' })),
  ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 8, description: 'a password of at least 8 characters' })),
  // Failed credential checks (issue 19): counted per account and per address, shared through REDIS_URL.
  AUTH_FAILURES_PER_ACCOUNT: Type.Integer({ minimum: 1, default: 10, description: 'a positive integer' }),
  AUTH_FAILURES_PER_ADDRESS: Type.Integer({ minimum: 1, default: 30, description: 'a positive integer' }),
  AUTH_FAILURE_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 900, description: 'an integer of seconds, at least 1' }),
  AUTH_LOCKOUT_SECONDS: Type.Integer({ minimum: 1, default: 900, description: 'an integer of seconds, at least 1' }),
  AUTH_LOCKOUT_MAX_SECONDS: Type.Integer({ minimum: 1, default: 21_600, description: 'an integer of seconds, at least 1' }),
  // Issue 34: a client that signed in to an account before (device cookie, or address) counts apart.
  AUTH_FAILURES_PER_DEVICE: Type.Integer({ minimum: 1, default: 5, description: 'a positive integer' }),
  AUTH_TRUST_SECONDS: Type.Integer({ minimum: 60, default: 7_776_000, description: 'an integer of seconds, at least 60' })
})

export const RateLimitConfig = Type.Object({
  RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, default: 90, description: 'a positive integer' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', description: 'a redis:// URL' }))
})

export const MailConfig = Type.Object({
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://', description: 'an smtp:// or smtps:// URL' })),
  MAIL_FROM: Type.String({ minLength: 3, default: 'Sensor Platform <notifications@localhost>', description: 'a sender address' })
})

export const UploadConfig = Type.Object({
  UPLOAD_MAX_BYTES: Type.Integer({ minimum: 1024, default: 5 * 1024 * 1024, description: 'an integer of bytes, at least 1024' })
})

export const ReadingsConfig = Type.Object({
  READINGS_MAX_VALUES: Type.Integer({ minimum: 1, default: 100_000, description: 'a positive integer' }),
  READINGS_MAX_FUTURE_SECONDS: Type.Integer({ minimum: 0, default: 86_400, description: 'an integer of seconds' }),
  READINGS_MAX_BUCKETS: Type.Integer({ minimum: 10, default: 50_000, description: 'an integer, at least 10' }),
  READ_CACHE_MB: Type.Integer({ minimum: 0, default: 64, description: 'an integer of MiB (0 keeps nothing)' })
})

/** The exporter's archives and scheduled jobs (behaviour.md §11, §14). */
export const ExportConfig = Type.Object({
  CSV_ARCHIVE_LINK_TTL_SECONDS: Type.Integer({ minimum: 60, default: 86_400, description: 'an integer of seconds, at least 60' }),
  DEVICE_PURGE_GRACE_SECONDS: Type.Integer({ minimum: 0, default: 86_400, description: 'an integer of seconds' }),
  STOPPED_PUBLISHING_AFTER_SECONDS: Type.Integer({ minimum: 60, default: 3600, description: 'an integer of seconds, at least 60' }),
  LOW_BATTERY_PERCENT: Type.Number({ minimum: 1, maximum: 100, default: 15, description: 'a percentage from 1 to 100' }),
  CSV_IMPORT_MAX_BYTES: Type.Integer({ minimum: 1024, maximum: 256 * 1024 * 1024, default: 16 * 1024 * 1024, description: 'an integer of bytes, from 1024 to 268435456' }),
  EXPORT_MAX_CONCURRENT: Type.Integer({ minimum: 1, maximum: 64, default: 4, description: 'an integer from 1 to 64' }),
  // Per caller (issue 33): an anonymous address, a citizen, a researcher or admin. Below
  // EXPORT_MAX_CONCURRENT by default, so no one caller holds every slot of a process.
  EXPORT_MAX_PER_ANONYMOUS: Type.Integer({ minimum: 1, maximum: 64, default: 1, description: 'an integer from 1 to 64' }),
  EXPORT_MAX_PER_CITIZEN: Type.Integer({ minimum: 1, maximum: 64, default: 2, description: 'an integer from 1 to 64' }),
  EXPORT_MAX_PER_RESEARCHER: Type.Integer({ minimum: 1, maximum: 64, default: 3, description: 'an integer from 1 to 64' }),
  // An export whose client takes no bytes this long is stopped; and any export after
  // EXPORT_MAX_SECONDS, so that a trickle reader frees its slot too. 30 minutes is generous: a
  // year of 12 sensors is 185 MB of CSV (9 MB of Parquet), minutes on a slow link, and the export
  // across devices resumes with `from` set to the last time received.
  EXPORT_IDLE_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 30, description: 'an integer of seconds from 1 to 3600' }),
  EXPORT_MAX_SECONDS: Type.Integer({ minimum: 60, maximum: 86_400, default: 1800, description: 'an integer of seconds from 60 to 86400' })
})

/** The explorer (issue 22): with no tile server it draws the countries it ships; production may name one. */
export const ExplorerConfig = Type.Object({
  EXPLORER_TILE_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s"\']*\\{z\\}[^\\s"\']*\\{x\\}[^\\s"\']*\\{y\\}[^\\s"\']*$', description: 'a raster tile URL template with {z}, {x} and {y} (and optionally {s})' })),
  EXPLORER_TILE_ATTRIBUTION: Type.Optional(Type.String({ maxLength: 300, description: 'the attribution the tile server asks for, as text' }))
})
