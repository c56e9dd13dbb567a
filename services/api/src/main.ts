import { main } from '@esp/http'
import { apiService } from './app.js'
import { ApiConfig, apiDeps } from './config.js'

await main(ApiConfig, {
  title: 'api service',
  applicationName: 'esp-api',
  register: async (app, database, { config, secret }) => { await app.register(apiService, apiDeps(config, database, secret)) }
})
