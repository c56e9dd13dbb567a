import type { Database } from '@esp/db'
import type { Clock, DeviceTokenGuesses, IngestContext } from '@esp/domain'

export interface IngestRouteContext {
  database: Database
  ingest: IngestContext
  clock: Clock
  /** failed device-secret checks per address, one count for MQTT, /add and the broker's auth backend */
  guesses: DeviceTokenGuesses
  /** /add's stores under way after their answers (shutdown and tests wait for them) */
  legacyPending: Set<Promise<void>>
}
