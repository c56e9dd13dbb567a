import { main } from '@esp/http'
import { ingestService } from './app.js'
import { mqttAddressLine } from './broker/broker-plugin.js'
import { IngestConfig, ingestDeps } from './config.js'

await main(IngestConfig, {
  title: 'ingest service',
  applicationName: 'esp-ingest',
  register: async (app, database, { config, explicit }) => { await app.register(ingestService, ingestDeps(config, database, explicit)) },
  describe: (app, { config }) => [mqttAddressLine(app, config.MQTT_PORT)]
})
