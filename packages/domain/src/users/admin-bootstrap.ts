import { eq, sql } from 'drizzle-orm'
import { type Db, users } from '@esp/db'
import { revokeCredentials } from '../auth/credential-cache.js'
import { hashPassword, randomSecret } from '../auth/secrets.js'

export interface AdminAccount { username: string, email: string, password: string }

/**
 * ADMIN_USERNAME, ADMIN_EMAIL and ADMIN_PASSWORD at start: the account is created, or made admin
 * with these credentials, so an operator can always get in. Idempotent across restarts and replicas.
 */
export async function ensureAdmin (db: Db, account: AdminAccount): Promise<number> {
  const passwordHash = await hashPassword(account.password)
  return await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(7250331002)`)
    const [existing] = await tx.select({ id: users.id, forwardingToken: users.forwardingToken, forwardingUsername: users.forwardingUsername })
      .from(users).where(sql`lower(${users.username}) = lower(${account.username})`).limit(1)
    const forwarding = {
      forwardingToken: existing?.forwardingToken ?? randomSecret(12),
      forwardingUsername: existing?.forwardingUsername ?? randomSecret(12)
    }
    if (existing !== undefined) {
      await tx.update(users).set({ role: 'admin', email: account.email, passwordHash, archivedAt: null, updatedAt: new Date(), ...forwarding }).where(eq(users.id, existing.id))
      await revokeCredentials(tx, existing.id)
      return existing.id
    }
    const [row] = await tx.insert(users).values({ username: account.username, email: account.email, passwordHash, role: 'admin', legacyApiKey: randomSecret(20), ...forwarding }).returning({ id: users.id })
    return row?.id ?? 0
  })
}
