import type { JobExecutor, PayloadOf, QueueKey } from '@esp/jobs'

/** Enqueues a job in the caller's transaction (pg-boss in production, the same in tests). */
export type JobSender = <K extends QueueKey>(tx: JobExecutor, key: K, payload: PayloadOf<K>) => Promise<void>
