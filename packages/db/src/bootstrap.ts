import path from 'node:path'
import { createDatabase, type Database } from './client.js'
import { type EmbeddedServer, startEmbeddedPostgres } from './embedded.js'
import { migrateDatabase } from './migrate.js'
import { seedCatalogue } from './seed.js'
import { registerDayOffsets } from './timeseries/day-offsets.js'

export interface PlatformDatabaseOptions {
  /** an external server; without it the embedded PostgreSQL under dataDir is used */
  url?: string | undefined
  dataDir: string
  poolMax: number
  applicationName: string
  /** forces the time-series engine at the first migration (TS_ENGINE) */
  engine?: 'timescale' | 'native' | undefined
  /** offsets (ms) whose shifted daily tiers must exist (ROLLUP_TIME_ZONES), filled once when new */
  dayOffsetsMs?: readonly number[]
  log?: (message: string) => void
}

export interface PlatformDatabase extends Database {
  embedded: boolean
}

/** Opens the platform's database: starts the embedded server when no URL is given, migrates, seeds, registers the zones' daily tiers. */
export async function openPlatformDatabase (options: PlatformDatabaseOptions): Promise<PlatformDatabase> {
  let embedded: EmbeddedServer | undefined
  let url = options.url
  if (url === undefined) {
    const dataDir = path.resolve(options.dataDir)
    options.log?.(`starting the embedded PostgreSQL in ${path.join(dataDir, 'pg')}`)
    embedded = await startEmbeddedPostgres({ dataDir, notice: options.log })
    url = embedded.url
  }
  try {
    await migrateDatabase(url, { engine: options.engine })
    const database = createDatabase(url, { max: options.poolMax, applicationName: options.applicationName })
    await seedCatalogue(database)
    await registerDayOffsets(database.sql, options.dayOffsetsMs ?? [], options.log)
    const server = embedded
    return {
      ...database,
      embedded: server !== undefined,
      close: async () => {
        await database.close()
        await server?.stop()
      }
    }
  } catch (err) {
    await embedded?.stop()
    throw err
  }
}
