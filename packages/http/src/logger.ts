import type { FastifyRequest, FastifyServerOptions } from 'fastify'

/**
 * Secrets never reach the log: auth headers, passwords, tokens (access, device, forwarding, OAuth
 * client secrets), the device-identifying headers of the older /add form, MQTT client ids (a
 * device's client id is its token), and credentials or tokens inside URLs. Paths cover the request
 * as Fastify logs it and any object a handler logs with headers or a body in it.
 */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-smartcitizenapikey"]',
  'req.headers["x-smartcitizenmacaddr"]',
  'res.headers["set-cookie"]',
  // a handler logging `{ headers }` itself (top level), or an object holding them (one down)
  'headers.authorization',
  'headers.cookie',
  'headers["x-smartcitizenapikey"]',
  'headers["x-smartcitizenmacaddr"]',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["x-smartcitizenapikey"]',
  '*.headers["x-smartcitizenmacaddr"]',
  '*.password',
  '*.password_hash',
  '*.passwordHash',
  '*.new_password',
  '*.access_token',
  '*.accessToken',
  '*.refresh_token',
  '*.device_token',
  '*.deviceToken',
  '*.token',
  '*.secret',
  '*.client_secret',
  '*.forwarding_token',
  '*.mac_address',
  '*.macAddress',
  '*.clientId',
  '*.client_id',
  'clientId',
  'token',
  'password'
]

const SECRET_QUERY = /([?&](?:access_token|bearer_token|password|token|device_token|client_secret|signature|key)=)[^&#]*/gi
// A password-reset code is the last path segment of its link (/v0/password_resets/<code>).
const SECRET_PATH = /(\/password_resets\/)[^/?#\s]+/gi
// scheme://user:password@host — DATABASE_URL, SMTP_URL and REDIS_URL in connection errors.
const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*:)[^@/?#\s]+@/gi

/** The URL, or any text holding URLs, with tokens in query strings and URL passwords masked. */
export function maskUrl (url: string): string {
  return url.replace(SECRET_QUERY, '$1[REDACTED]').replace(SECRET_PATH, '$1[REDACTED]').replace(URL_CREDENTIALS, '$1[REDACTED]@')
}

interface SerializedError { [key: string]: unknown, type: string, message: string, stack: string }

/** pino's error fields (type, message, stack, code, cause), with credentials masked in the text. */
function errorSerializer (err: Error, depth = 0): SerializedError {
  const fields = err as Error & { code?: unknown, statusCode?: unknown }
  const cause: unknown = err.cause
  return {
    type: err.name,
    message: maskUrl(err.message),
    stack: maskUrl(err.stack ?? ''),
    ...(fields.code !== undefined ? { code: fields.code } : {}),
    ...(fields.statusCode !== undefined ? { statusCode: fields.statusCode } : {}),
    // drizzle keeps PostgreSQL's message in the cause (PITFALLS.md 13)
    ...(cause instanceof Error && depth < 3 ? { cause: errorSerializer(cause, depth + 1) } : {})
  }
}

export function loggerOptions (level: string): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  return {
    level,
    redact: { paths: redactPaths, censor: '[REDACTED]' },
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: maskUrl(request.url),
        remoteAddress: request.ip
      }),
      err: (err: Error) => errorSerializer(err)
    }
  }
}
