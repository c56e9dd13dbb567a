import { main } from '@esp/http'
import { exporterService } from './app.js'
import { ExporterConfig, exporterDeps } from './config.js'

await main(ExporterConfig, {
  title: 'exporter service',
  applicationName: 'esp-exporter',
  register: async (app, database, { config, secret }) => { await app.register(exporterService, exporterDeps(config, database, secret)) }
})
