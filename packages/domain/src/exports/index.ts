export { ARCHIVE_FILE, ARCHIVE_INTERVAL_MS, archiveLinkSecret, requestCsvArchive, signArchiveLink, verifyArchiveLink, type ArchiveRequestContext } from './archive.js'
export { archiveCopySql, csvCell, exportCopySql, type ExportFormat, type ExportRange } from './copy-sql.js'
export { openReadingsExport, type ExportParams, type OpenedExport } from './export-stream.js'
export { OLDEST_IMPORT, createCsvImport, csvImportStatus, parseSdCsv, runCsvImport, validateSdCsv, type ImportContext, type ImportJobContext, type ImportLimits, type ImportView, type ParsedCsv } from './csv-import.js'
