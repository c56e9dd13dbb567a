import { createRequire } from 'node:module'
import PgBoss from 'pg-boss'
import { databaseUnavailability } from '@esp/db'

export interface BossOptions {
  url: string
  /** background failures are events; without a listener they would vanish (pg-boss docs, events) */
  onError: (error: Error) => void
  max?: number
  /** producers only send: no maintenance or cron loops in their process */
  producerOnly?: boolean
  /** how long a job's completion waits for the database to come back (60 s) */
  completionRetryMs?: number
}

const SCHEMA = 'pgboss'

interface Plans {
  completeJobs: (schema: string) => string
  failJobsById: (schema: string) => string
}

// pg-boss 10 has no exports map: its plan functions give the exact text of its statements.
const plans = createRequire(import.meta.url)('pg-boss/src/plans.js') as Plans
const COMPLETIONS = new Set([plans.completeJobs(SCHEMA), plans.failJobsById(SCHEMA)])

/** The same failure reported again within this window is counted, not logged. */
const OUTAGE_REPORT_MS = 30_000

/**
 * A pg-boss instance on the platform's own database, in its own `pgboss` schema, that no
 * database outage can end the process through (issue 33): every background failure is an
 * `error` event, and a database that restarts (57P03, 57P01, refused connections) is reported
 * once per 30 s rather than by every worker at every poll; the loops resume by themselves.
 */
export function createBoss (options: BossOptions): PgBoss {
  const boss = new PgBoss({
    connectionString: options.url,
    schema: SCHEMA,
    max: options.max ?? 4,
    application_name: 'esp-jobs',
    ...(options.producerOnly === true ? { supervise: false, schedule: false } : {})
  })
  const report = outageReporter(options.onError)
  boss.on('error', report)
  retryCompletions(boss.getDb(), options.completionRetryMs ?? 60_000, report)
  return boss
}

/** Passes errors on; database outages once per OUTAGE_REPORT_MS, with how many were held back. */
function outageReporter (onError: (error: Error) => void): (error: Error) => void {
  let lastReason: string | undefined
  let lastAt = 0
  let held = 0
  return (error) => {
    const reason = databaseUnavailability(error)?.reason
    if (reason === undefined) {
      onError(error)
      return
    }
    if (reason === lastReason && Date.now() - lastAt < OUTAGE_REPORT_MS) {
      held++
      return
    }
    if (held > 0) error.message = `${error.message} (${held} more job queue errors while the database was unavailable)`
    lastReason = reason
    lastAt = Date.now()
    held = 0
    onError(error)
  }
}

/**
 * pg-boss 10's workers record a job's completion or failure without awaiting it
 * (manager.js `watch`: `this.complete(...)`, `this.fail(...)`), so a database that goes away
 * while a job runs turned that statement's rejection into an unhandled rejection, which ends the
 * process. These two statements are idempotent: they are retried until the database is back
 * (within retryMs); past that, or on any other error, they end with an error event instead of a
 * rejection, and the job, still active, expires and is retried by pg-boss's maintenance.
 */
function retryCompletions (db: PgBoss.Db, retryMs: number, report: (error: Error) => void): void {
  const execute = db.executeSql.bind(db)
  db.executeSql = async (text, values) => {
    if (!COMPLETIONS.has(text)) return await execute(text, values)
    const deadline = Date.now() + retryMs
    for (let pauseMs = 100; ; pauseMs = Math.min(pauseMs * 2, 5000)) {
      try {
        return await execute(text, values)
      } catch (err) {
        // Nobody awaits this statement: it must not reject.
        if (databaseUnavailability(err) === null || Date.now() + pauseMs > deadline) {
          const error = err instanceof Error ? err : new Error(String(err))
          error.message = `a job's completion was not recorded (${error.message}); the job will expire and be retried`
          report(error)
          return { rows: [{ count: 0 }] }
        }
        await new Promise((resolve) => setTimeout(resolve, pauseMs))
      }
    }
  }
}

export type { PgBoss }
