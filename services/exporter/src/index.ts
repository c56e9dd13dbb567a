export { exporterService, SCHEDULES, type ExporterDeps } from './app.js'
export { ExporterConfig, exporterDeps } from './config.js'
export { handleCsvArchive, type CsvArchiveDeps } from './jobs/csv-archive.js'
export { notifyLowBattery, notifyStoppedPublishing, purgeArchivedDevices, type ScheduledDeps } from './jobs/scheduled.js'
