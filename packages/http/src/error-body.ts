import { Type, type Static } from '@sinclair/typebox'

/** The one error body every route answers with (behaviour.md §2). Registered once under this $id. */
export const ErrorBody = Type.Object({
  id: Type.String({ description: 'stable snake_case reason, e.g. record_not_found' }),
  message: Type.String(),
  errors: Type.Union([
    Type.Record(Type.String(), Type.Array(Type.String())),
    Type.String(),
    Type.Null()
  ], { description: 'per-field messages, or null' }),
  url: Type.Union([Type.String(), Type.Null()], { description: 'documentation link, or null' })
}, { $id: 'ErrorBody', additionalProperties: false })

export type ErrorBodyType = Static<typeof ErrorBody>

/** `response` entries for the error statuses a route declares, all pointing at the shared schema. */
export function errorResponses (...statuses: number[]): Record<number, { $ref: string }> {
  return Object.fromEntries(statuses.map((s) => [s, { $ref: 'ErrorBody#' }]))
}
