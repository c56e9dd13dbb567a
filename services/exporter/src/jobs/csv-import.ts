import { type ImportJobContext, runCsvImport } from '@esp/domain'
import type { CsvImportPayload } from '@esp/jobs'

/** Stores a validated CSV import through the readings write path (domain runCsvImport). */
export async function handleCsvImport (deps: ImportJobContext, payload: CsvImportPayload): Promise<void> {
  await runCsvImport(deps, payload.importId)
}
