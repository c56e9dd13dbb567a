import { findPendingReset, findResetAccount, type Handle, inTransaction, insertPasswordReset, updateUserRow, useUpPasswordReset } from '@esp/db'
import type { PasswordResetPayload } from '@esp/jobs'
import type { JobSender } from '../jobs.js'
import { errors } from '../errors.js'
import { hashPassword, randomSecret, sha256 } from '../auth/secrets.js'
import { PASSWORD_MAX, PASSWORD_MIN } from './user-rules.js'
import { revokeTokens } from './user-service.js'
import type { UserRow } from './user-presenter.js'

export const RESET_MESSAGE = 'Password Reset Instructions Delivered'

/**
 * Step 1, in the request: one job, the same for every identifier, and nothing else. Looking the
 * account up here made the answer for an existing account twice as slow (a lookup, an insert and
 * a mail job against a lookup), which told anyone with a stopwatch which accounts exist.
 */
export async function requestPasswordReset (database: Handle, send: JobSender, input: { identifier: string, baseUrl: string, ttlSeconds: number, now: Date }): Promise<void> {
  const identifier = input.identifier.trim()
  // Decided by the text alone, never by the account: such an identifier names no account anyway.
  if (identifier === '' || identifier.length > 254) return
  await send(database, 'passwordReset', { identifier, baseUrl: input.baseUrl, ttlSeconds: input.ttlSeconds, requestedAt: input.now.getTime() })
}

/**
 * Step 1, in the job: when the account exists, a single-use token is stored hashed and the e-mail
 * is queued in the same transaction; otherwise nothing happens. True when a mail was queued.
 */
export async function deliverPasswordReset (database: Handle, send: JobSender, job: PasswordResetPayload): Promise<boolean> {
  const { identifier } = job
  return await inTransaction(database, async (tx) => {
    const user = await findResetAccount(tx, identifier)
    if (user === undefined) return false
    const token = randomSecret(32)
    const expiresAt = new Date(job.requestedAt + job.ttlSeconds * 1000)
    await insertPasswordReset(tx, { userId: user.id, tokenHash: sha256(token), expiresAt, createdAt: new Date(job.requestedAt) })
    const hours = Math.round(job.ttlSeconds / 3600)
    await send(tx, 'mail', {
      to: user.email,
      subject: 'Password Reset Instructions',
      text: [
        `Hello ${user.username},`,
        '',
        'Someone asked to reset the password of your account. If it was you, set a new password with:',
        '',
        `  PATCH ${job.baseUrl}/v0/password_resets/${token}   with the field "password"`,
        '',
        `Your reset code is ${token}. It works once and expires in ${hours} hours.`,
        'If you did not ask for this, ignore this message: your password stays as it is.'
      ].join('\n')
    })
    return true
  })
}

async function pendingReset (database: Handle, token: string, now: Date) {
  const row = await findPendingReset(database, sha256(token), now)
  if (row === undefined) throw errors.notFound('PasswordReset', 'token')
  return row
}

/** Step 2/3: the user a valid, unused, unexpired token belongs to. */
export async function userForResetToken (database: Handle, token: string, now: Date): Promise<UserRow> {
  return (await pendingReset(database, token, now)).user
}

/** Step 4: sets the password, uses up the token and revokes every access token of the user. */
export async function completePasswordReset (database: Handle, token: string, password: string | undefined, now: Date): Promise<UserRow> {
  if (password === undefined || password === '') throw errors.parameterMissing(['password'])
  if (password.length < PASSWORD_MIN) throw errors.unprocessable({ password: [`is too short (minimum is ${PASSWORD_MIN} characters)`] })
  if (password.length > PASSWORD_MAX) throw errors.unprocessable({ password: [`is too long (maximum is ${PASSWORD_MAX} characters)`] })
  const passwordHash = await hashPassword(password)
  return await inTransaction(database, async (tx) => {
    const { reset, user } = await pendingReset(tx, token, now)
    // Marking it used only while still unused makes two concurrent resets with one token fail once.
    if (!await useUpPasswordReset(tx, reset.id, now)) throw errors.notFound('PasswordReset', 'token')
    const updated = await updateUserRow(tx, user.id, { passwordHash, updatedAt: now })
    await revokeTokens(tx, user.id, now)
    return updated ?? user
  })
}
