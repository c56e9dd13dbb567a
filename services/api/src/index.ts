export { apiService, type ApiDeps } from './app.js'
export { ApiConfig } from './config.js'
