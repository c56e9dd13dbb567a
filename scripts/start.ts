/**
 * `pnpm start`: api, ingest and exporter in one process, on one HTTP port and one MQTT port, on
 * the embedded defaults unless DATABASE_URL is set. In production each service runs alone
 * (services/<name>/src/main.ts); this is the same code, packaged as one.
 */
import { Type } from '@sinclair/typebox'
import { DbConfig, HttpConfig, LogConfig, MqttConfig } from '@esp/config'
import { main } from '@esp/http'
import { apiService } from '@esp/api'
import { exporterService } from '@esp/exporter'
import { ingestService, mqttAddressLine } from '@esp/ingest'

const PlatformConfig = Type.Composite([DbConfig, HttpConfig, MqttConfig, LogConfig])

await main(PlatformConfig, {
  title: 'sensor platform (api + ingest + exporter)',
  applicationName: 'esp-all',
  register: async (app, database, { config, explicit }) => {
    await app.register(apiService, { database })
    await app.register(ingestService, {
      database,
      mqtt: { host: config.MQTT_HOST, port: config.MQTT_PORT, explicit: explicit.has('MQTT_PORT') }
    })
    await app.register(exporterService, { database })
  },
  describe: (app, { config }) => [mqttAddressLine(app, config.MQTT_PORT)]
})
