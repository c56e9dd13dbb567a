import type { FastifyInstance } from 'fastify'
import { type Handle, jobCounts } from '@esp/db'
import { Gauge } from '@esp/http'

const JOB_STATES = ['created', 'retry', 'active', 'failed'] as const

/**
 * Queue depth and failures, on the server's registry, from the exporter only: the queue is global,
 * so replicas of the other services would each report the same numbers.
 */
export function jobMetrics (app: FastifyInstance, database: Handle): void {
  // Servers built without the shared plugins have no registry.
  if (!app.hasDecorator('metrics')) return
  const jobs = new Gauge({ name: 'esp_jobs', help: 'Jobs in the queue tables, by queue and state (created = waiting)', labelNames: ['queue', 'state'], registers: [app.metrics.registry] })
  app.metrics.onScrape(async () => {
    const rows = await jobCounts(database, JOB_STATES)
    jobs.reset()
    for (const row of rows) jobs.set({ queue: row.name, state: row.state }, Number(row.n))
  })
}
