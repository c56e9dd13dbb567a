import { type Static, Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, HttpConfig, LogConfig, MailConfig, RateLimitConfig } from '@esp/config'
import type { Database } from '@esp/db'
import type { ExporterDeps } from './app.js'

export const ExporterConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, MailConfig, LogConfig])

export function exporterDeps (config: Pick<Static<typeof ExporterConfig>, 'DATA_DIR' | 'SMTP_URL' | 'MAIL_FROM'>, database: Database): ExporterDeps {
  return { database, dataDir: config.DATA_DIR, smtpUrl: config.SMTP_URL, mailFrom: config.MAIL_FROM }
}
