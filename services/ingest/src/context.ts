import type { Database } from '@esp/db'
import type { Clock, IngestContext } from '@esp/domain'

export interface IngestRouteContext {
  database: Database
  ingest: IngestContext
  clock: Clock
}
