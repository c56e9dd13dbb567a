import type { FastifyBaseLogger, FastifyRequest, FastifyServerOptions } from 'fastify'

type Bindings = Parameters<FastifyBaseLogger['child']>[0]
type ChildLoggerOptions = NonNullable<Parameters<FastifyBaseLogger['child']>[1]>

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

/** Query parameters whose value is a credential, by their decoded name in lower case. */
// A broker auth check's client id and routing key hold a device token (cluster-auth.ts).
const SECRET_PARAMS = new Set(['access_token', 'bearer_token', 'refresh_token', 'password', 'new_password', 'token', 'device_token', 'client_secret', 'signature', 'key', 'download_key',
  'client_id', 'variable_map.client_id', 'variable_map.username', 'routing_key'])
// Every `name=value` of a query string (or of a URL inside a message). Names are matched after
// decoding, as the query parser reads them: `access%5Ftoken=` is access_token to the platform, so
// a pattern over the raw text would log the very token the request authenticated with.
const QUERY_PARAM = /([?&])([^=&#\s]*)=([^&#]*)/g
// A password-reset code is the last path segment of its link (/v0/password_resets/<code>), however
// the segment before it is percent-encoded.
const SECRET_PATH = /(\/password(?:_|%5f)resets\/)[^/?#\s]+/gi
// scheme://user:password@host — DATABASE_URL, SMTP_URL and REDIS_URL in connection errors.
const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*:)[^@/?#\s]+@/gi

/** A parameter name as the query parser reads it; malformed escapes are decoded byte by byte. */
function decodeName (raw: string): string {
  if (!raw.includes('%') && !raw.includes('+')) return raw.toLowerCase()
  const spaced = raw.replace(/\+/g, ' ')
  try {
    return decodeURIComponent(spaced).toLowerCase()
  } catch {
    return spaced.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))).toLowerCase()
  }
}

/** The URL, or any text holding URLs, with tokens in query strings and URL passwords masked. */
export function maskUrl (url: string): string {
  return url
    .replace(QUERY_PARAM, (whole, lead: string, name: string) => SECRET_PARAMS.has(decodeName(name).trim()) ? `${lead}${name}=[REDACTED]` : whole)
    .replace(SECRET_PATH, '$1[REDACTED]')
    .replace(URL_CREDENTIALS, '$1[REDACTED]@')
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

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type LogCall = (...args: unknown[]) => void

/**
 * A request's logger, made into pino's child only when something is logged. Fastify makes a child
 * for every request, and pino's child runs the redaction's setup on its bindings each time: 4 %
 * of a kept read's CPU for a logger that, at the production level, a served request never uses.
 * A call below the level is dropped here, as the child would drop it.
 */
class LazyChildLogger {
  private made: FastifyBaseLogger | undefined

  constructor (private readonly parent: FastifyBaseLogger, private readonly bindings: Bindings, private readonly options: ChildLoggerOptions) {}

  get level (): string { return this.options.level ?? this.parent.level }
  set level (level: string) { this.real().level = level }

  isLevelEnabled (level: string): boolean {
    const values = (this.parent as FastifyBaseLogger & { levels: { values: Record<string, number> } }).levels.values
    return (values[level] ?? 0) >= (values[this.level] ?? Infinity)
  }

  fatal (...args: unknown[]): void { this.log('fatal', args) }
  error (...args: unknown[]): void { this.log('error', args) }
  warn (...args: unknown[]): void { this.log('warn', args) }
  info (...args: unknown[]): void { this.log('info', args) }
  debug (...args: unknown[]): void { this.log('debug', args) }
  trace (...args: unknown[]): void { this.log('trace', args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger { return this.real().child(bindings, options) }

  private log (level: Level, args: unknown[]): void {
    if (this.isLevelEnabled(level)) (this.real()[level] as LogCall)(...args)
  }

  private real (): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }
}

/** Fastify's `childLoggerFactory`: LazyChildLogger. */
export function lazyChildLogger (logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger
}
