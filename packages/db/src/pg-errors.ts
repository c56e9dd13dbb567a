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
