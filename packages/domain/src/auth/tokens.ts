import { randomUUID } from 'node:crypto'
import { findLoginAccount, type Handle, insertAccessToken, revokeAccessTokenByHash } from '@esp/db'
import { errors } from '../errors.js'
import { revokeCredentials } from './revocation.js'
import { sha256, verifyPassword } from './secrets.js'
import type { LoginAccount } from './device-trust.js'
import type { CredentialGate, SignedIn } from './throttle.js'
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
export async function issueAccessToken (database: Handle, signer: TokenSigner, options: { userId: number, applicationId?: number | null, ttlSeconds: number, now: Date }): Promise<IssuedToken> {
  const token = signer.sign({ sub: String(options.userId), jti: randomUUID() }, options.ttlSeconds)
  const expiresAt = new Date(options.now.getTime() + options.ttlSeconds * 1000)
  await insertAccessToken(database, { userId: options.userId, applicationId: options.applicationId ?? null, tokenHash: sha256(token), expiresAt, createdAt: options.now })
  return { token, expiresAt, expiresIn: options.ttlSeconds }
}

/** An active account a login (username or e-mail, case-insensitive) names, with what a password check needs. */
export interface LoginRow extends LoginAccount { viewer: Viewer }

export async function findLogin (database: Handle, login: string): Promise<LoginRow | undefined> {
  const row = await findLoginAccount(database, login)
  return row === undefined ? undefined : { id: row.id, passwordHash: row.passwordHash, viewer: { id: row.id, username: row.username, role: row.role } }
}

/** A password check of `login` through the gate: the account once, its password checked unless the gate refuses. */
export async function passwordLogin (database: Handle, gate: CredentialGate, login: string, password: string): Promise<SignedIn<LoginRow> | null> {
  return await gate.password(login, async () => await findLogin(database, login), async (account) => await verifyPassword(account?.passwordHash, password))
}

/**
 * POST /sessions: the same answer for an unknown login and a wrong password, so it reveals no
 * account. The gate counts the attempt and refuses a locked-out caller before the password is read.
 */
export async function login (database: Handle, signer: TokenSigner, gate: CredentialGate, input: { login: string, password: string, ttlSeconds: number, now: Date, applicationId?: number | null }): Promise<IssuedToken & { viewer: Viewer, deviceCookie: string }> {
  const signedIn = await passwordLogin(database, gate, input.login, input.password)
  if (signedIn === null) throw errors.invalidCredentials()
  const viewer = signedIn.account.viewer
  return { ...(await issueAccessToken(database, signer, { userId: viewer.id, applicationId: input.applicationId ?? null, ttlSeconds: input.ttlSeconds, now: input.now })), viewer, deviceCookie: signedIn.deviceCookie }
}

export async function revokeToken (database: Handle, token: string, now: Date): Promise<void> {
  const revoked = await revokeAccessTokenByHash(database, sha256(token), now)
  // After the token's own update, so a process that sees the new generation also sees the revocation.
  if (revoked !== undefined) await revokeCredentials(database, revoked.userId)
}
