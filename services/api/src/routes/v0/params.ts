import type { FastifyRequest } from 'fastify'
import { rawQuery } from '@esp/http'

/**
 * Query parameters merged under the body, for the endpoints the established platform reads from
 * either (`POST /sessions?username=..`, `POST /password_resets?email_or_username=..`).
 */
export function mergedParams (request: FastifyRequest): Record<string, string | undefined> {
  const merged: Record<string, string | undefined> = {}
  for (const [key, value] of rawQuery(request)) merged[key] = value
  const body = request.body
  if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
    for (const [key, value] of Object.entries(body)) {
      if (typeof value === 'string') merged[key] = value
      else if (typeof value === 'number' || typeof value === 'boolean') merged[key] = String(value)
    }
  }
  return merged
}
