import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { databaseUnavailableReason, embeddedDatabaseStatus, withDeadline } from '@esp/db'
import { errors } from '@esp/domain'
import { errorResponses } from './error-body.js'
import { sendError } from './error-handler.js'

export interface ReadinessCheck {
  /** resolves to a reason when the service cannot serve yet, to null when it can */
  (): Promise<string | null>
}

const Status = Type.Object({ status: Type.String() })
const READY_DEADLINE_MS = 2000

export async function healthRoutes (app: FastifyInstance, options: { ready: ReadinessCheck }): Promise<void> {
  const common = { tags: ['health'], hide: false }
  // Load balancers probe these constantly: they are never throttled.
  const config = { rateLimit: false as const }
  // A probe's answer is of this moment and this process: no cache may keep it.
  app.addHook('onRequest', async (_request, reply) => { reply.header('cache-control', 'no-store') })
  // Live while the process can recover by itself, a database outage included (its embedded server
  // is being started again); failing only tells a supervisor to restart the process.
  app.get('/health/live', {
    config,
    schema: { ...common, summary: 'The process is up and can recover by itself', operationId: 'healthLive', response: { 200: Status, ...errorResponses(503) } }
  }, async (_request, reply) => {
    const { failure } = embeddedDatabaseStatus()
    if (failure !== null) return sendError(reply, errors.serviceUnavailable(`the embedded PostgreSQL cannot recover by itself: ${failure}`))
    return { status: 'live' }
  })
  app.get('/health/ready', {
    config,
    schema: { ...common, summary: 'The database is reachable and migrated', operationId: 'healthReady', response: { 200: Status, ...errorResponses(503) } }
  }, async (_request, reply) => {
    let problem: string | null
    try {
      // A probe must be answered, not left waiting on a connection attempt.
      problem = await withDeadline(options.ready(), READY_DEADLINE_MS, () => `the database did not answer within ${READY_DEADLINE_MS} ms`)
    } catch (err) {
      // The error handler answers it as it does for every route, and the database gate takes note.
      if (databaseUnavailableReason(err) !== null) throw err
      problem = `the readiness check failed: ${err instanceof Error ? err.message : String(err)}`
    }
    if (problem !== null) return sendError(reply, errors.serviceUnavailable(problem))
    return { status: 'ready' }
  })
}
