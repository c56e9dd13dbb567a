export { exporterService, type ExporterDeps } from './app.js'
export { ExporterConfig, exporterDeps } from './config.js'
