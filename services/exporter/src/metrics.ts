import type { FastifyInstance } from 'fastify'
import type PgBoss from 'pg-boss'
import { Gauge } from '@esp/http'

const JOB_STATES = ['created', 'retry', 'active', 'failed'] as const

/**
 * Queue depth and failures, on the server's registry, from the exporter only: the queue is global,
 * so replicas of the other services would each report the same numbers.
 */
export function jobMetrics (app: FastifyInstance, boss: PgBoss): void {
  // Servers built without the shared plugins have no registry.
  if (!app.hasDecorator('metrics')) return
  const jobs = new Gauge({ name: 'esp_jobs', help: 'Jobs in the queue tables, by queue and state (created = waiting)', labelNames: ['queue', 'state'], registers: [app.metrics.registry] })
  app.metrics.onScrape(async () => {
    const { rows } = await boss.getDb().executeSql(
      `select q.name, s.state, count(j.id)::int as n
         from pgboss.queue q
        cross join unnest($1::text[]) as s(state)
         left join pgboss.job j on j.name = q.name and j.state = s.state::pgboss.job_state
        group by q.name, s.state`, [JOB_STATES])
    jobs.reset()
    for (const row of rows as Array<{ name: string, state: string, n: number }>) jobs.set({ queue: row.name, state: row.state }, Number(row.n))
  })
}
