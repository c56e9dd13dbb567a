import { Value } from '@sinclair/typebox/value'
import type PgBoss from 'pg-boss'
import type { Sql } from '@esp/db'
import { type PayloadOf, type QueueKey, queues } from './queues.js'

/** A postgres.js transaction (or connection) that pg-boss runs its insert on. */
export type JobExecutor = Pick<Sql, 'unsafe'>

/**
 * pg-boss is written against node-postgres, which binds undefined as null and objects as JSON;
 * postgres.js does neither by itself.
 */
function asPgParam (value: unknown): unknown {
  if (value === undefined) return null
  if (value !== null && typeof value === 'object' && !(value instanceof Date) && !Buffer.isBuffer(value) && !Array.isArray(value)) return JSON.stringify(value)
  return value
}

/**
 * Sends a job inside the caller's transaction, so the job exists if and only if the change that
 * caused it commits (pg-boss `db` option). The payload is checked against its schema first.
 */
export async function sendJob<K extends QueueKey> (boss: PgBoss, tx: JobExecutor, key: K, payload: PayloadOf<K>): Promise<string | null> {
  const queue = queues[key]
  if (!Value.Check(queue.payload, payload)) {
    const first = [...Value.Errors(queue.payload, payload)][0]
    throw new Error(`invalid ${queue.name} job payload: ${first?.path ?? ''} ${first?.message ?? ''}`)
  }
  const db = { executeSql: async (text: string, values: unknown[] = []) => ({ rows: await tx.unsafe(text, values.map(asPgParam) as never[]) }) }
  return await boss.send(queue.name, payload, { db, retryLimit: 5, retryDelay: 30, retryBackoff: true })
}

/** Any constant works; the same for every process that creates this database's queues. */
const QUEUE_LOCK = 7_250_331_002

/**
 * Queues exist before anything is sent to them (pg-boss 10 rejects sends to unknown queues).
 * pg-boss's create_queue deadlocks against itself when two processes create one queue at the
 * same moment (replicas starting together on a new database: one failed to start), so the
 * processes take turns under an advisory lock held by a transaction of `sql`; the next finds the
 * queues made.
 */
export async function ensureQueues (boss: PgBoss, sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${QUEUE_LOCK})`
    for (const queue of Object.values(queues)) {
      if ((await boss.getQueue(queue.name)) === null) await boss.createQueue(queue.name)
    }
  })
}
