import { Type } from '@sinclair/typebox'

const port = (fallback: number, what: string) =>
  Type.Integer({ minimum: 0, maximum: 65535, default: fallback, description: `a TCP port for ${what} (0 picks a free one)` })

/** Keys every service reads to reach its database and data folder. */
export const DbConfig = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://', description: 'a postgres:// URL' })),
  DATABASE_POOL_MAX: Type.Integer({ minimum: 1, maximum: 500, default: 10, description: 'an integer from 1 to 500' }),
  DATA_DIR: Type.String({ minLength: 1, default: './.data', description: 'a folder path' }),
  TS_ENGINE: Type.Optional(Type.Union([Type.Literal('timescale'), Type.Literal('native')], { description: '"timescale" or "native"' }))
})

export const HttpConfig = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'an interface address' }),
  PORT: port(3000, 'HTTP'),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+[^/\\s]$', description: 'an absolute http(s) URL without a trailing slash' })),
  TRUST_PROXY: Type.Boolean({ default: false, description: 'true or false' }),
  CORS_ORIGINS: Type.String({ pattern: '^(https?://[^\\s,/]+(,https?://[^\\s,/]+)*)?$', default: '', description: 'comma-separated origins such as https://app.example.org' }),
  API_VENDOR: Type.String({ pattern: '^[a-z0-9.-]+$', default: 'smartcitizen', description: 'a lower-case vendor name' }),
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 5 * 1024 * 1024, description: 'an integer of bytes, at least 1024' }),
  VERSION_GIT: Type.Optional(Type.String({ description: 'a version string' }))
})

export const MqttConfig = Type.Object({
  MQTT_HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'an interface address' }),
  MQTT_PORT: port(1883, 'MQTT')
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
  ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 8, description: 'a password of at least 8 characters' }))
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
  READINGS_MAX_BUCKETS: Type.Integer({ minimum: 10, default: 50_000, description: 'an integer, at least 10' })
})
