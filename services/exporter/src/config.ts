import { type Static, Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, ExportConfig, HttpConfig, LogConfig, MailConfig, RateLimitConfig } from '@esp/config'
import type { Database } from '@esp/db'
import { archiveLinkSecret } from '@esp/domain'
import type { ExporterDeps } from './app.js'

export const ExporterConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, MailConfig, ExportConfig, LogConfig])

type ExporterSettings = Pick<Static<typeof ExporterConfig>, 'DATA_DIR' | 'SMTP_URL' | 'MAIL_FROM'> & Partial<Static<typeof ExportConfig>>

/** The exporter's dependencies; the link key is derived from the platform secret as the api derives it. */
export function exporterDeps (config: ExporterSettings, database: Database, secret: string): ExporterDeps {
  return {
    database,
    dataDir: config.DATA_DIR,
    smtpUrl: config.SMTP_URL,
    mailFrom: config.MAIL_FROM,
    archiveLinkSecret: archiveLinkSecret(secret),
    archiveLinkTtlSeconds: config.CSV_ARCHIVE_LINK_TTL_SECONDS,
    purgeGraceSeconds: config.DEVICE_PURGE_GRACE_SECONDS,
    stoppedPublishingAfterSeconds: config.STOPPED_PUBLISHING_AFTER_SECONDS,
    lowBatteryPercent: config.LOW_BATTERY_PERCENT
  }
}
