import PgBoss from 'pg-boss'

export interface BossOptions {
  url: string
  /** background failures are events; without a listener they would vanish (pg-boss docs, events) */
  onError: (error: Error) => void
  max?: number
  /** producers only send: no maintenance or cron loops in their process */
  producerOnly?: boolean
}

/** A pg-boss instance on the platform's own database, in its own `pgboss` schema. */
export function createBoss (options: BossOptions): PgBoss {
  const boss = new PgBoss({
    connectionString: options.url,
    max: options.max ?? 4,
    application_name: 'esp-jobs',
    ...(options.producerOnly === true ? { supervise: false, schedule: false } : {})
  })
  boss.on('error', options.onError)
  return boss
}

export type { PgBoss }
