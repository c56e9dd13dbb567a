import { randomUUID } from 'node:crypto'
import { and, eq, isNull, or, sql } from 'drizzle-orm'
import { accessTokens, type Executor, users } from '@esp/db'
import { errors } from '../errors.js'
import { revokeCredentials } from './credential-cache.js'
import { sha256, verifyPassword } from './secrets.js'
import type { CredentialGate } from './throttle.js'
import type { Viewer } from './viewer.js'

/** Signs and checks access tokens (JWT through @fastify/jwt in the HTTP layer). */
export interface TokenSigner {
  sign: (claims: { sub: string, jti: string }, expiresInSeconds: number) => string
  /** the claims of a well-signed, unexpired token, or null */
  verify: (token: string) => { sub: string, jti: string } | null
}

export interface IssuedToken { token: string, expiresAt: Date, expiresIn: number }

/**
 * A new access token. The JWT proves it was issued here; the stored hash lets it be revoked
 * (password change, reset, logout) before it expires. The token itself is never stored.
 */
export async function issueAccessToken (db: Executor, signer: TokenSigner, options: { userId: number, applicationId?: number | null, ttlSeconds: number, now: Date }): Promise<IssuedToken> {
  const token = signer.sign({ sub: String(options.userId), jti: randomUUID() }, options.ttlSeconds)
  const expiresAt = new Date(options.now.getTime() + options.ttlSeconds * 1000)
  await db.insert(accessTokens).values({ userId: options.userId, applicationId: options.applicationId ?? null, tokenHash: sha256(token), expiresAt, createdAt: options.now })
  return { token, expiresAt, expiresIn: options.ttlSeconds }
}

/** A user found by username or e-mail (case-insensitive) whose password matches, or null. */
export async function checkCredentials (db: Executor, login: string, password: string): Promise<Viewer | null> {
  const [row] = await db.select({ id: users.id, username: users.username, role: users.role, passwordHash: users.passwordHash })
    .from(users)
    .where(and(isNull(users.archivedAt), or(sql`lower(${users.username}) = lower(${login})`, sql`lower(${users.email}) = lower(${login})`)))
    .limit(1)
  const ok = await verifyPassword(row?.passwordHash, password)
  return ok && row !== undefined ? { id: row.id, username: row.username, role: row.role } : null
}

/**
 * POST /sessions: the same answer for an unknown login and a wrong password, so it reveals no
 * account. The gate counts the attempt and refuses a locked-out caller before the password is read.
 */
export async function login (db: Executor, signer: TokenSigner, gate: CredentialGate, input: { login: string, password: string, ttlSeconds: number, now: Date, applicationId?: number | null }): Promise<IssuedToken & { viewer: Viewer }> {
  const viewer = await gate.verify(input.login, async () => await checkCredentials(db, input.login, input.password))
  if (viewer === null) throw errors.invalidCredentials()
  return { ...(await issueAccessToken(db, signer, { userId: viewer.id, applicationId: input.applicationId ?? null, ttlSeconds: input.ttlSeconds, now: input.now })), viewer }
}

export async function revokeToken (db: Executor, token: string, now: Date): Promise<void> {
  const revoked = await db.update(accessTokens).set({ revokedAt: now }).where(and(eq(accessTokens.tokenHash, sha256(token)), isNull(accessTokens.revokedAt)))
    .returning({ userId: accessTokens.userId })
  // After the token's own update, so a process that sees the new generation also sees the revocation.
  if (revoked[0] !== undefined) await revokeCredentials(db, revoked[0].userId)
}
