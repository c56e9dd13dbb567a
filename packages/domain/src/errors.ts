/**
 * The error catalogue. The domain throws these; the HTTP layer turns them into the one error body
 * `{id, message, errors, url}` (behaviour.md §2). `code` is stable and never reused.
 */
export type FieldErrors = Record<string, string[]>

export class ApiError extends Error {
  readonly code: string
  /** snake_case reason that clients read, e.g. `record_not_found` */
  readonly id: string
  readonly statusCode: number
  readonly errors: FieldErrors | string | null
  readonly url: string | null
  readonly headers: Record<string, string>

  constructor (init: {
    code: string
    id: string
    statusCode: number
    message: string
    errors?: FieldErrors | string | null
    url?: string | null
    headers?: Record<string, string>
  }) {
    super(init.message)
    this.name = 'ApiError'
    this.code = init.code
    this.id = init.id
    this.statusCode = init.statusCode
    this.errors = init.errors ?? null
    this.url = init.url ?? null
    this.headers = init.headers ?? {}
  }
}

export const errors = {
  badRequest: (message: string, errors: FieldErrors | null = null) =>
    new ApiError({ code: 'ESP_BAD_REQUEST', id: 'bad_request', statusCode: 400, message, errors }),
  malformedJson: (detail: string) =>
    new ApiError({ code: 'ESP_MALFORMED_JSON', id: 'bad_request', statusCode: 400, message: `Malformed JSON body: ${detail}` }),
  malformedMultipart: () =>
    new ApiError({ code: 'ESP_MALFORMED_MULTIPART', id: 'bad_request', statusCode: 400, message: 'Malformed multipart body: it needs a boundary of 1 to 70 characters and parts closed by that boundary' }),
  parameterMissing: (names: string[]) =>
    new ApiError({
      code: 'ESP_PARAMETER_MISSING',
      id: 'parameter_missing',
      statusCode: 400,
      message: `param is missing or the value is empty: ${names.join(' and ')}`,
      errors: Object.fromEntries(names.map((n) => [n, ["can't be blank"]]))
    }),
  invalidParameters: (fields: FieldErrors) =>
    new ApiError({ code: 'ESP_INVALID_PARAMETERS', id: 'bad_request', statusCode: 400, message: 'Invalid parameters', errors: fields }),
  unauthorized: (message = 'Authorization required') =>
    new ApiError({ code: 'ESP_UNAUTHORIZED', id: 'unauthorized', statusCode: 401, message, url: null }),
  invalidCredentials: () =>
    new ApiError({ code: 'ESP_INVALID_CREDENTIALS', id: 'unprocessable_entity', statusCode: 422, message: 'Invalid username or password', errors: { password: ['is incorrect'] } }),
  badCredentials: () =>
    new ApiError({ code: 'ESP_BAD_BASIC_CREDENTIALS', id: 'unauthorized', statusCode: 401, message: 'Invalid Username/Password Combination', headers: { 'www-authenticate': 'Basic realm="Application", Bearer realm="Application"' } }),
  invalidToken: (viaParam: boolean) =>
    new ApiError({ code: 'ESP_INVALID_TOKEN', id: 'unauthorized', statusCode: 401, message: viaParam ? 'Invalid OAuth2 Params' : 'Invalid or revoked access token', headers: { 'www-authenticate': 'Bearer realm="Application", error="invalid_token"' } }),
  forbidden: () =>
    new ApiError({ code: 'ESP_FORBIDDEN', id: 'forbidden', statusCode: 403, message: 'You do not have the access permissions to do this' }),
  crossOriginCookie: () =>
    new ApiError({ code: 'ESP_CROSS_ORIGIN_COOKIE', id: 'forbidden', statusCode: 403, message: 'A change signed in by the session cookie must come from this API\'s origin or a web origin in CORS_ORIGINS (checked by Origin, else Referer); send the access token as a Bearer header instead' }),
  notFound: (what: string, key: string | number) =>
    new ApiError({ code: 'ESP_RECORD_NOT_FOUND', id: 'record_not_found', statusCode: 404, message: `Couldn't find ${what} with '${typeof key === 'number' ? 'id' : 'key'}'=${String(key)}` }),
  routeNotFound: (method: string, url: string) =>
    new ApiError({ code: 'ESP_ROUTE_NOT_FOUND', id: 'not_found', statusCode: 404, message: `Endpoint not found: ${method} ${url}` }),
  methodNotAllowed: () =>
    new ApiError({ code: 'ESP_METHOD_NOT_ALLOWED', id: 'method_not_allowed', statusCode: 405, message: 'Method not allowed' }),
  uriTooLong: (maxSegment: number) =>
    new ApiError({ code: 'ESP_URI_TOO_LONG', id: 'uri_too_long', statusCode: 414, message: `A path segment is longer than ${maxSegment} characters` }),
  headersTooLarge: () =>
    new ApiError({ code: 'ESP_HEADERS_TOO_LARGE', id: 'request_header_fields_too_large', statusCode: 431, message: 'The request line and headers are larger than the server accepts' }),
  requestTimeout: () =>
    new ApiError({ code: 'ESP_REQUEST_TIMEOUT', id: 'request_timeout', statusCode: 408, message: 'The request was not received in time' }),
  expectationFailed: (expect: string) =>
    new ApiError({ code: 'ESP_EXPECTATION_FAILED', id: 'expectation_failed', statusCode: 417, message: `Expect: ${expect} is not supported (only 100-continue is)` }),
  malformedRequest: (what: string) =>
    new ApiError({ code: 'ESP_MALFORMED_REQUEST', id: 'bad_request', statusCode: 400, message: `Malformed request: ${what}` }),
  unsupportedMediaType: (type: string) =>
    new ApiError({ code: 'ESP_UNSUPPORTED_MEDIA_TYPE', id: 'unsupported_media_type', statusCode: 415, message: `Unsupported content type: ${type}. Send application/json, form fields or multipart.` }),
  payloadTooLarge: (limit: number) =>
    new ApiError({ code: 'ESP_PAYLOAD_TOO_LARGE', id: 'payload_too_large', statusCode: 413, message: `The body is larger than the limit of ${limit} bytes` }),
  unprocessable: (fields: FieldErrors | string) =>
    new ApiError({ code: 'ESP_UNPROCESSABLE', id: 'unprocessable_entity', statusCode: 422, message: 'Unprocessable Entity', errors: fields }),
  enhanceYourCalm: (message: string) =>
    new ApiError({ code: 'ESP_ENHANCE_YOUR_CALM', id: 'enhance_your_calm', statusCode: 420, message }),
  tooManyRequests: (retryAfterSeconds: number) =>
    new ApiError({
      code: 'ESP_TOO_MANY_REQUESTS',
      id: 'too_many_requests',
      statusCode: 429,
      message: `Rate limit exceeded, retry in ${retryAfterSeconds} seconds`,
      headers: { 'retry-after': String(retryAfterSeconds) }
    }),
  serviceUnavailable: (message: string) =>
    new ApiError({ code: 'ESP_SERVICE_UNAVAILABLE', id: 'service_unavailable', statusCode: 503, message }),
  /** the database cannot be reached: worth retrying soon, the reason says why */
  databaseUnavailable: (reason: string) =>
    new ApiError({ code: 'ESP_DATABASE_UNAVAILABLE', id: 'service_unavailable', statusCode: 503, message: `Service Unavailable: ${reason}, retry in 1 second`, headers: { 'retry-after': '1' } }),
  internal: () =>
    new ApiError({ code: 'ESP_INTERNAL', id: 'internal_server_error', statusCode: 500, message: 'Internal Server Error' })
}

/** The `id` for a status when nothing more specific is known. */
export function idForStatus (status: number): string {
  const ids: Record<number, string> = {
    400: 'bad_request',
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not_found',
    405: 'method_not_allowed',
    406: 'not_acceptable',
    408: 'request_timeout',
    409: 'conflict',
    413: 'payload_too_large',
    414: 'uri_too_long',
    415: 'unsupported_media_type',
    417: 'expectation_failed',
    420: 'enhance_your_calm',
    422: 'unprocessable_entity',
    429: 'too_many_requests',
    431: 'request_header_fields_too_large',
    503: 'service_unavailable'
  }
  return ids[status] ?? (status >= 500 ? 'internal_server_error' : 'bad_request')
}
