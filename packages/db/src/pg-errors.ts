/** PostgreSQL error codes the platform translates (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
export const PgCode = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  checkViolation: '23514',
  invalidTextRepresentation: '22P02',
  undefinedTable: '42P01'
} as const

export interface PgError { code: string, constraint_name?: string, detail?: string, message: string }

/** drizzle wraps driver errors ("Failed query: ..."); the PostgreSQL error sits in `cause`. */
export function pgError (err: unknown): PgError | undefined {
  let current: unknown = err
  for (let depth = 0; depth < 3 && current !== null && typeof current === 'object'; depth++) {
    if ('code' in current && typeof current.code === 'string' && /^[0-9A-Z]{5}$/.test(current.code)) {
      return current as PgError
    }
    current = 'cause' in current ? current.cause : undefined
  }
  return undefined
}

export function isPgCode (err: unknown, code: string): boolean {
  return pgError(err)?.code === code
}

const UNAVAILABLE_DRIVER_CODES = new Set([
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ERR_STREAM_DESTROYED'
])
const UNAVAILABLE_SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300'])

/** What a person can act on, without the server's address. */
function describeUnavailable (code: string): string {
  if (code === 'ECONNREFUSED') return 'it refuses connections'
  if (code === 'CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return 'a connection attempt timed out'
  if (code === '57P01') return 'it terminated the session'
  if (code === '57P02') return 'it stopped after a crash'
  if (code === '57P03') return 'it is starting up or shutting down'
  if (code === '53300') return 'it has no connection slots left'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'its host name does not resolve'
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'its host is unreachable'
  if (code.startsWith('08')) return 'the connection to it failed'
  return 'the connection to it was lost'
}

/** postgres.js names its own connection errors so; no other client of the process does. */
const DRIVER_OWN_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT'])

export interface Unavailability {
  reason: string
  /**
   * The error can only have come from the database: the server's own codes, the driver's own, an
   * outbound connect, or a failed query. A bare ECONNRESET or EPIPE might also be a client that
   * went away in the middle of its request, so it is confirmed before anything is concluded.
   */
  certain: boolean
}

/**
 * Why the database cannot serve, when the error says it cannot be reached or ended the session
 * rather than that a query was wrong: the driver's own codes (CONNECTION_CLOSED, CONNECT_TIMEOUT),
 * the socket's (ECONNREFUSED) and the server's when it stops, restarts or terminates sessions
 * (class 08, 57P01-57P03, 53300). Null for any other error.
 */
export function databaseUnavailability (err: unknown): Unavailability | null {
  let current: unknown = err
  for (let depth = 0; depth < 3 && current !== null && typeof current === 'object'; depth++) {
    const code = 'code' in current ? current.code : undefined
    if (typeof code === 'string' && (UNAVAILABLE_DRIVER_CODES.has(code) || UNAVAILABLE_SERVER_CODES.has(code) || code.startsWith('08'))) {
      const syscall = 'syscall' in current ? current.syscall : undefined
      const certain = !UNAVAILABLE_DRIVER_CODES.has(code) || DRIVER_OWN_CODES.has(code) || syscall === 'connect' || syscall === 'getaddrinfo' || 'query' in current
      return { reason: `the database is unavailable: ${describeUnavailable(code)}`, certain }
    }
    current = 'cause' in current ? current.cause : undefined
  }
  return null
}

export const databaseUnavailableReason = (err: unknown): string | null => databaseUnavailability(err)?.reason ?? null
export const isDatabaseUnavailable = (err: unknown): boolean => databaseUnavailability(err) !== null
