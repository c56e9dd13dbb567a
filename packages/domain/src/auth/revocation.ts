import { bumpAuthGeneration, type Handle } from '@esp/db'

/** The change feed's topic of credential changes (payload `{ userId }`, null: anyone's). */
export const AUTH_TOPIC = 'auth'

/**
 * In the revoking transaction: makes every remembered credential of every process check again
 * (credential-cache.ts). The bump commits with the revocation, so every snapshot taken after the
 * revoking request returned sees it; the notification only frees memory early.
 */
export async function revokeCredentials (tx: Handle, userId: number | null): Promise<void> {
  await bumpAuthGeneration(tx, AUTH_TOPIC, userId)
}
