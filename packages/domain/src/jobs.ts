import type { Handle } from '@esp/db'
import type { PayloadOf, QueueKey } from '@esp/jobs'

/** Enqueues a job in the transaction of `tx` (or alone, given the pool): pg-boss in production, the same in tests. */
export type JobSender = <K extends QueueKey>(tx: Handle, key: K, payload: PayloadOf<K>) => Promise<void>
