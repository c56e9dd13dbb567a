import type { Runner } from '@esp/db'

/*
 * What a history request asks and what it runs with, in a file of their own: the history, its
 * window and its limit all read them, and none of those may import another back.
 */

export interface HistoryParams {
  sensor_id?: string | undefined
  sensor_key?: string | undefined
  rollup?: string | undefined
  function?: string | undefined
  from?: string | undefined
  to?: string | undefined
  all_intervals?: string | undefined
  /** an IANA zone whose wall clock hours, days, weeks, months and years follow (default UTC) */
  timezone?: string | undefined
  /** `true`: each bucket also carries the number of readings in it */
  coverage?: string | undefined
  /** several sensors, one series each (histories.ts): ids separated by commas, or `all` */
  sensor_ids?: string | undefined
  sensor_keys?: string | undefined
  /** only the oldest `limit` stored readings of each sensor in [from, to] are aggregated (KairosDB's metric limit) */
  limit?: string | undefined
}

/** Answers that may be streamed (HistoryContext.stream). */
export interface StreamOptions {
  /** the most buckets one streamed answer holds (by the count made before reading it) */
  maxBuckets: number
}

/** Queries run through a Runner, so the same code serves postgres.js and PGlite (TimescaleDB) alike. */
export interface HistoryContext {
  runner: Runner
  now: () => Date
  maxBuckets: number
  /** the most raw readings a piece folds in the process (RAW_PAIRS_MAX unless set) */
  rawPairsMax?: number
  /** the most values (series × buckets) one request answers; MAX_VALUES_FACTOR × maxBuckets unless set */
  maxValues?: number
  /**
   * Called with the number of values a request will answer once that is known and before the
   * work starts (for raw readings, once read): the caller's rate limit takes more of an expensive
   * request, and may refuse it (a 429) before anything is read.
   */
  charge?: (values: number) => Promise<void> | void
  /**
   * Set when the caller can write an answer as it is read (a Readable, historyJson): one sensor's
   * answer of more than maxBuckets buckets is then streamed, a run of buckets at a time, in memory
   * proportional to a run. Without it such a request is a 400 naming maxBuckets.
   */
  stream?: StreamOptions
}
