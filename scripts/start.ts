/**
 * `pnpm start`: api, ingest and exporter in one process, on one HTTP port and one MQTT port, on
 * the embedded defaults unless DATABASE_URL is set. In production each service runs alone
 * (services/<name>/src/main.ts); this is the same code, packaged as one.
 */
import { Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, ExplorerConfig, ExportConfig, HttpConfig, LogConfig, MailConfig, MqttConfig, RateLimitConfig, ReadingsConfig, UploadConfig } from '@esp/config'
import { main } from '@esp/http'
import { apiDeps, apiService } from '@esp/api'
import { exporterDeps, exporterService } from '@esp/exporter'
import { ingestDeps, ingestService, mqttAddressLine } from '@esp/ingest'
import { ensureExplorerBuilt } from '@esp/explorer'

const PlatformConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, UploadConfig, MailConfig, MqttConfig, ReadingsConfig, ExportConfig, ExplorerConfig, LogConfig])

// A fresh clone, or sources changed since the last build: the explorer is built before serving (about a second).
if (await ensureExplorerBuilt()) console.log('built the explorer (packages/explorer/dist)')

await main(PlatformConfig, {
  title: 'sensor platform (api + ingest + exporter)',
  applicationName: 'esp-all',
  register: async (app, database, { config, explicit, secret }) => {
    await app.register(apiService, apiDeps(config, database, secret))
    await app.register(ingestService, ingestDeps(config, database, explicit))
    await app.register(exporterService, exporterDeps(config, database, secret))
  },
  describe: (app, { config }) => [mqttAddressLine(app, config.MQTT_PORT)]
})
