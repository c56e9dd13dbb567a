import { and, eq, gt, isNull, or, sql } from 'drizzle-orm'
import { type Database, type Executor, inTransaction, passwordResets, users } from '@esp/db'
import type { JobSender } from '../jobs.js'
import { errors } from '../errors.js'
import { hashPassword, randomSecret, sha256 } from '../auth/secrets.js'
import { PASSWORD_MAX, PASSWORD_MIN } from './user-rules.js'
import { revokeTokens } from './user-service.js'
import type { UserRow } from './user-presenter.js'

export const RESET_MESSAGE = 'Password Reset Instructions Delivered'

/**
 * Step 1: when the account exists, a single-use token is stored hashed and the e-mail is queued in
 * the same transaction. The caller answers the same way either way, so nothing reveals an account.
 */
export async function requestPasswordReset (database: Database, send: JobSender, input: { identifier: string, baseUrl: string, ttlSeconds: number, now: Date }): Promise<void> {
  const identifier = input.identifier.trim()
  if (identifier === '' || identifier.length > 254) return
  await inTransaction(database, async (tx) => {
    const [user] = await tx.db.select({ id: users.id, email: users.email, username: users.username }).from(users)
      .where(and(isNull(users.archivedAt), or(sql`lower(${users.email}) = lower(${identifier})`, sql`lower(${users.username}) = lower(${identifier})`)))
      .limit(1)
    if (user === undefined) return
    const token = randomSecret(32)
    const expiresAt = new Date(input.now.getTime() + input.ttlSeconds * 1000)
    await tx.db.insert(passwordResets).values({ userId: user.id, tokenHash: sha256(token), expiresAt, createdAt: input.now })
    const hours = Math.round(input.ttlSeconds / 3600)
    await send(tx.sql, 'mail', {
      to: user.email,
      subject: 'Password Reset Instructions',
      text: [
        `Hello ${user.username},`,
        '',
        'Someone asked to reset the password of your account. If it was you, set a new password with:',
        '',
        `  PATCH ${input.baseUrl}/v0/password_resets/${token}   with the field "password"`,
        '',
        `Your reset code is ${token}. It works once and expires in ${hours} hours.`,
        'If you did not ask for this, ignore this message: your password stays as it is.'
      ].join('\n')
    })
  })
}

async function pendingReset (db: Executor, token: string, now: Date) {
  const [row] = await db.select({ reset: passwordResets, user: users }).from(passwordResets)
    .innerJoin(users, eq(users.id, passwordResets.userId))
    .where(and(eq(passwordResets.tokenHash, sha256(token)), isNull(passwordResets.usedAt), gt(passwordResets.expiresAt, now), isNull(users.archivedAt)))
    .limit(1)
  if (row === undefined) throw errors.notFound('PasswordReset', 'token')
  return row
}

/** Step 2/3: the user a valid, unused, unexpired token belongs to. */
export async function userForResetToken (db: Executor, token: string, now: Date): Promise<UserRow> {
  return (await pendingReset(db, token, now)).user
}

/** Step 4: sets the password, uses up the token and revokes every access token of the user. */
export async function completePasswordReset (database: Database, token: string, password: string | undefined, now: Date): Promise<UserRow> {
  if (password === undefined || password === '') throw errors.parameterMissing(['password'])
  if (password.length < PASSWORD_MIN) throw errors.unprocessable({ password: [`is too short (minimum is ${PASSWORD_MIN} characters)`] })
  if (password.length > PASSWORD_MAX) throw errors.unprocessable({ password: [`is too long (maximum is ${PASSWORD_MAX} characters)`] })
  const passwordHash = await hashPassword(password)
  return await inTransaction(database, async ({ db }) => {
    const { reset, user } = await pendingReset(db, token, now)
    // Marking it used only while still unused makes two concurrent resets with one token fail once.
    const used = await db.update(passwordResets).set({ usedAt: now }).where(and(eq(passwordResets.id, reset.id), isNull(passwordResets.usedAt))).returning({ id: passwordResets.id })
    if (used.length === 0) throw errors.notFound('PasswordReset', 'token')
    const [updated] = await db.update(users).set({ passwordHash, updatedAt: now }).where(eq(users.id, user.id)).returning()
    await revokeTokens(db, user.id, now)
    return updated ?? user
  })
}
