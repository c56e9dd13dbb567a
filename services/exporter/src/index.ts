export { exporterService, type ExporterDeps } from './app.js'
export { ExporterConfig } from './config.js'
