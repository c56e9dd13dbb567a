import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { errors } from '@esp/domain'
import { errorResponses } from './error-body.js'
import { sendError } from './error-handler.js'

export interface ReadinessCheck {
  /** resolves to a reason when the service cannot serve yet, to null when it can */
  (): Promise<string | null>
}

const Status = Type.Object({ status: Type.String() })

export async function healthRoutes (app: FastifyInstance, options: { ready: ReadinessCheck }): Promise<void> {
  const common = { tags: ['health'], hide: false }
  // Load balancers probe these constantly: they are never throttled.
  const config = { rateLimit: false as const }
  app.get('/health/live', {
    config,
    schema: { ...common, summary: 'The process is up', operationId: 'healthLive', response: { 200: Status } }
  }, async () => ({ status: 'live' }))
  app.get('/health/ready', {
    config,
    schema: { ...common, summary: 'The database is reachable and migrated', operationId: 'healthReady', response: { 200: Status, ...errorResponses(503) } }
  }, async (_request, reply) => {
    let problem: string | null
    try {
      problem = await options.ready()
    } catch (err) {
      problem = `database unreachable: ${err instanceof Error ? err.message : String(err)}`
    }
    if (problem !== null) return sendError(reply, errors.serviceUnavailable(problem))
    return { status: 'ready' }
  })
}
