import type { FastifyRequest, FastifyServerOptions } from 'fastify'

/** Secrets never reach the log: auth headers, passwords, tokens, including tokens inside URLs. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-smartcitizenapikey"]',
  'res.headers["set-cookie"]',
  '*.password',
  '*.password_hash',
  '*.passwordHash',
  '*.access_token',
  '*.accessToken',
  '*.device_token',
  '*.deviceToken',
  '*.token',
  '*.client_secret',
  '*.forwarding_token'
]

const SECRET_QUERY = /([?&](?:access_token|bearer_token|password|token|client_secret|signature)=)[^&#]*/gi

export function maskUrl (url: string): string {
  return url.replace(SECRET_QUERY, '$1[REDACTED]')
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
      })
    }
  }
}
