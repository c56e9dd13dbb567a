import { main } from '@esp/http'
import { ingestService } from './app.js'
import { mqttAddressLine } from './broker/broker-plugin.js'
import { IngestConfig } from './config.js'

await main(IngestConfig, {
  title: 'ingest service',
  applicationName: 'esp-ingest',
  register: async (app, database, { config, explicit }) => {
    await app.register(ingestService, {
      database,
      mqtt: { host: config.MQTT_HOST, port: config.MQTT_PORT, explicit: explicit.has('MQTT_PORT') }
    })
  },
  describe: (app, { config }) => [mqttAddressLine(app, config.MQTT_PORT)]
})
