import type { Database, Runner } from '@esp/db'
import type { Clock, JobSender, RepresentationCache, UploadStore, WorldMap } from '@esp/domain'

/** What every api route plugin gets: no globals, so tests build it with their own database and clock. */
export interface ApiContext {
  /**
   * The primary: writes, and reads that must see them. Routes read through `request.reads`
   * (read-routing.ts), which is this unless a read replica may serve the request.
   */
  database: Database
  /** the time-series read path's runner on the primary's pool */
  history: Runner
  send: JobSender
  clock: Clock
  /** the precomputed world map, shared by the map routes */
  worldMap: WorldMap
  /** representations kept whole, by revision (DESIGN.md, Read) */
  representations: RepresentationCache
  uploads: UploadStore
  settings: {
    accessTokenTtlSeconds: number
    passwordResetTtlSeconds: number
    uploadMaxBytes: number
    /** signs the older form's avatar upload policies */
    uploadSecret: string
    /** most buckets one readings query answers */
    maxBuckets: number
    /** READ_CACHE_MB in bytes: the representations kept, and a quarter of it again for an area's closed days */
    readCacheBytes: number
  }
}
