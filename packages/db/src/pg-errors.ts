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
  /**
   * The server cannot be reached or ended the session. False when it is up but lacks what this
   * work needs (a full disk, memory): the request is refused all the same, but reads may still
   * succeed, so the process does not take the whole database for gone.
   */
  unreachable: boolean
}

const DISK_FULL = /no space left on device/i

/**
 * What the server lacks when it refuses work for want of resources: class 53 (53100 disk_full,
 * 53200 out_of_memory) and any error whose message says the disk is full (58030 io_error, a
 * PANIC on a WAL write). 53300 (no connection slots) is an unavailability of its own.
 */
function describeShortage (code: string, message: string): string | null {
  if (code === '53100' || DISK_FULL.test(message)) return 'its disk is full'
  if (code === '53200') return 'it is out of memory'
  if (code.startsWith('53') && code !== '53300') return 'it lacks the resources for this request'
  return null
}

/**
 * Why the database cannot serve, when the error says it cannot be reached, ended the session or
 * lacks resources rather than that a query was wrong: the driver's own codes (CONNECTION_CLOSED,
 * CONNECT_TIMEOUT), the socket's (ECONNREFUSED), the server's when it stops, restarts or
 * terminates sessions (class 08, 57P01-57P03, 53300) and when its disk is full or memory short
 * (class 53, "No space left on device"). Null for any other error. The one rule that makes these
 * a 503 with Retry-After rather than a 500: a write refused so committed nothing.
 */
export function databaseUnavailability (err: unknown): Unavailability | null {
  let current: unknown = err
  for (let depth = 0; depth < 3 && current !== null && typeof current === 'object'; depth++) {
    const code = 'code' in current ? current.code : undefined
    if (typeof code === 'string' && (UNAVAILABLE_DRIVER_CODES.has(code) || UNAVAILABLE_SERVER_CODES.has(code) || code.startsWith('08'))) {
      const syscall = 'syscall' in current ? current.syscall : undefined
      const certain = !UNAVAILABLE_DRIVER_CODES.has(code) || DRIVER_OWN_CODES.has(code) || syscall === 'connect' || syscall === 'getaddrinfo' || 'query' in current
      return { reason: `the database is unavailable: ${describeUnavailable(code)}`, certain, unreachable: true }
    }
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
      const shortage = describeShortage(code, 'message' in current && typeof current.message === 'string' ? current.message : '')
      if (shortage !== null) return { reason: `the database is unavailable: ${shortage}`, certain: true, unreachable: false }
    }
    current = 'cause' in current ? current.cause : undefined
  }
  return null
}

export const databaseUnavailableReason = (err: unknown): string | null => databaseUnavailability(err)?.reason ?? null
export const isDatabaseUnavailable = (err: unknown): boolean => databaseUnavailability(err) !== null
