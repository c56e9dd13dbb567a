import { main } from '@esp/http'
import { apiService } from './app.js'
import { ApiConfig } from './config.js'

await main(ApiConfig, {
  title: 'api service',
  applicationName: 'esp-api',
  register: async (app, database) => { await app.register(apiService, { database }) }
})
