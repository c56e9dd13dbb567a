import { findUserForAdmin, type Handle, inTransaction, insertAdminAccount, lockAdminBootstrap, setAdminAccount } from '@esp/db'
import { revokeCredentials } from '../auth/revocation.js'
import { hashPassword, randomSecret } from '../auth/secrets.js'

export interface AdminAccount { username: string, email: string, password: string }

/**
 * ADMIN_USERNAME, ADMIN_EMAIL and ADMIN_PASSWORD at start: the account is created, or made admin
 * with these credentials, so an operator can always get in. Idempotent across restarts and replicas.
 */
export async function ensureAdmin (database: Handle, account: AdminAccount): Promise<number> {
  const passwordHash = await hashPassword(account.password)
  return await inTransaction(database, async (tx) => {
    await lockAdminBootstrap(tx)
    const existing = await findUserForAdmin(tx, account.username)
    const forwarding = {
      forwardingToken: existing?.forwardingToken ?? randomSecret(12),
      forwardingUsername: existing?.forwardingUsername ?? randomSecret(12)
    }
    if (existing !== undefined) {
      await setAdminAccount(tx, existing.id, { role: 'admin', email: account.email, passwordHash, archivedAt: null, updatedAt: new Date(), ...forwarding })
      await revokeCredentials(tx, existing.id)
      return existing.id
    }
    return await insertAdminAccount(tx, { username: account.username, email: account.email, passwordHash, role: 'admin', legacyApiKey: randomSecret(20), ...forwarding }) ?? 0
  })
}
