import { createHash } from 'node:crypto'
import { type Static, Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, ExplorerConfig, ExportConfig, HttpConfig, LogConfig, RateLimitConfig, ReadingsConfig, UploadConfig } from '@esp/config'
import { type Database, readUrls } from '@esp/db'
import { archiveLinkSecret, exportLinkSecret } from '@esp/domain'
import { explorerDist } from '@esp/explorer'
import type { ApiDeps } from './app.js'
import { explorerBuilt } from './explorer.js'

export const ApiConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, UploadConfig, ReadingsConfig, ExportConfig, ExplorerConfig, LogConfig])
export type ApiConfigType = Static<typeof ApiConfig>

type ApiSettings = Pick<ApiConfigType, 'DATA_DIR' | 'ACCESS_TOKEN_TTL_SECONDS' | 'PASSWORD_RESET_TTL_SECONDS' | 'UPLOAD_MAX_BYTES' | 'READINGS_MAX_BUCKETS' | 'READ_CACHE_MB' | 'READINGS_MAX_FUTURE_SECONDS' | 'CSV_IMPORT_MAX_BYTES' | 'EXPORT_MAX_CONCURRENT' | 'EXPORT_MAX_PER_ANONYMOUS' | 'EXPORT_MAX_PER_CITIZEN' | 'EXPORT_MAX_PER_RESEARCHER' | 'EXPORT_IDLE_SECONDS' | 'EXPORT_MAX_SECONDS' | 'ADMIN_USERNAME' | 'ADMIN_EMAIL' | 'ADMIN_PASSWORD' | 'EXPLORER_TILE_URL' | 'EXPLORER_TILE_ATTRIBUTION' | 'DATABASE_READ_URL' | 'DATABASE_READ_MAX_LAG_SECONDS'>

/** The api's dependencies from validated configuration; the upload key is derived, never reused as is. */
export function apiDeps (config: ApiSettings, database: Database, secret: string): ApiDeps {
  const admin = config.ADMIN_USERNAME !== undefined && config.ADMIN_EMAIL !== undefined && config.ADMIN_PASSWORD !== undefined
    ? { username: config.ADMIN_USERNAME, email: config.ADMIN_EMAIL, password: config.ADMIN_PASSWORD }
    : undefined
  return {
    database,
    dataDir: config.DATA_DIR,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    passwordResetTtlSeconds: config.PASSWORD_RESET_TTL_SECONDS,
    uploadMaxBytes: config.UPLOAD_MAX_BYTES,
    maxBuckets: config.READINGS_MAX_BUCKETS,
    readCacheBytes: config.READ_CACHE_MB * 2 ** 20,
    uploadSecret: createHash('sha256').update(`upload-policy:${secret}`).digest('base64url'),
    archiveLinkSecret: archiveLinkSecret(secret),
    exportLinkSecret: exportLinkSecret(secret),
    readingsMaxFutureSeconds: config.READINGS_MAX_FUTURE_SECONDS,
    csvImportMaxBytes: config.CSV_IMPORT_MAX_BYTES,
    exportMaxConcurrent: config.EXPORT_MAX_CONCURRENT,
    exportMaxPerCaller: { anonymous: config.EXPORT_MAX_PER_ANONYMOUS, citizen: config.EXPORT_MAX_PER_CITIZEN, researcher: config.EXPORT_MAX_PER_RESEARCHER },
    exportIdleSeconds: config.EXPORT_IDLE_SECONDS,
    exportMaxSeconds: config.EXPORT_MAX_SECONDS,
    admin,
    readReplicas: { urls: readUrls(config.DATABASE_READ_URL), maxLagSeconds: config.DATABASE_READ_MAX_LAG_SECONDS },
    // Served when it is built: `pnpm start` builds it, and so does the image (Dockerfile).
    explorer: explorerBuilt(explorerDist)
      ? { dir: explorerDist, tileUrl: config.EXPLORER_TILE_URL, tileAttribution: config.EXPLORER_TILE_ATTRIBUTION }
      : undefined
  }
}
