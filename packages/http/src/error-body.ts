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

/** What each error status means, for the OpenAPI document's responses. */
export const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: 'Bad request: a malformed body, parameter or filter (the failing fields are in `errors`)',
  401: 'Credentials missing, wrong or expired',
  403: 'Signed in, but not allowed: not the owner or an admin',
  404: 'No such record, or a path that names none',
  409: 'Conflicts with the current state',
  413: 'The body, or a file in it, is too large',
  415: 'The body has a media type this route does not read',
  420: 'Enhance your calm: asked again too soon',
  422: 'The body was read but its fields are invalid (per field in `errors`)',
  429: 'Too many requests: retry after `Retry-After` seconds',
  500: 'Internal error: logged; the body carries no details',
  503: 'Too busy or not ready: retry after `Retry-After` seconds'
}

/** `response` entries for the error statuses a route declares, all pointing at the shared schema. */
export function errorResponses (...statuses: number[]): Record<number, { $ref: string, description: string }> {
  return Object.fromEntries(statuses.map((s) => [s, { $ref: 'ErrorBody#', description: ERROR_DESCRIPTIONS[s] ?? 'Error' }]))
}
