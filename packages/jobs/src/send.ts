import { Value } from '@sinclair/typebox/value'
import type PgBoss from 'pg-boss'
import { type Handle, inTransaction, jobQueueExecutor, lockJobQueues } from '@esp/db'
import { type PayloadOf, type QueueKey, queues } from './queues.js'

/**
 * Sends a job inside the caller's transaction (`tx`, a Handle of inTransaction), so the job exists
 * if and only if the change that caused it commits (pg-boss `db` option); given the pool, on its
 * own. The payload is checked against its schema first.
 */
export async function sendJob<K extends QueueKey> (boss: PgBoss, tx: Handle, key: K, payload: PayloadOf<K>): Promise<string | null> {
  const queue = queues[key]
  if (!Value.Check(queue.payload, payload)) {
    const first = [...Value.Errors(queue.payload, payload)][0]
    throw new Error(`invalid ${queue.name} job payload: ${first?.path ?? ''} ${first?.message ?? ''}`)
  }
  return await boss.send(queue.name, payload, { db: jobQueueExecutor(tx), retryLimit: 5, retryDelay: 30, retryBackoff: true })
}

/**
 * Queues exist before anything is sent to them (pg-boss 10 rejects sends to unknown queues).
 * pg-boss's create_queue deadlocks against itself when two processes create one queue at the
 * same moment (replicas starting together on a new database: one failed to start), so the
 * processes take turns under an advisory lock held by a transaction of `database`
 * (lockJobQueues); the next finds the queues made.
 */
export async function ensureQueues (boss: PgBoss, database: Handle): Promise<void> {
  await inTransaction(database, async (tx) => {
    await lockJobQueues(tx)
    for (const queue of Object.values(queues)) {
      if ((await boss.getQueue(queue.name)) === null) await boss.createQueue(queue.name)
    }
  })
}
