import { main } from '@esp/http'
import { exporterService } from './app.js'
import { ExporterConfig } from './config.js'

await main(ExporterConfig, {
  title: 'exporter service',
  applicationName: 'esp-exporter',
  register: async (app, database) => { await app.register(exporterService, { database }) }
})
