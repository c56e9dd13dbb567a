export { apiService, type ApiDeps } from './app.js'
export { ApiConfig, apiDeps } from './config.js'
