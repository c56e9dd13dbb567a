/** `pnpm db:migrate`: applies pending migrations and seeds the catalogue (embedded database unless DATABASE_URL is set). */
import { ConfigError, DbConfig, fromEnvironment } from '@esp/config'
import { openPlatformDatabase } from '@esp/db'
import { rollupTimeZoneOffsets } from '@esp/domain'

try {
  const { config } = fromEnvironment(DbConfig)
  const database = await openPlatformDatabase({ url: config.DATABASE_URL, dataDir: config.DATA_DIR, poolMax: 1, applicationName: 'esp-migrate', engine: config.TS_ENGINE, dayOffsetsMs: rollupTimeZoneOffsets(config.ROLLUP_TIME_ZONES), log: console.log })
  await database.close()
  console.log('database migrated and seeded')
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `migration failed: ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
