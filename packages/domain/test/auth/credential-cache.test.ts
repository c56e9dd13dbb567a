import t from 'tap'
import { createDatabase, inTransaction } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ApiError, Authenticator, AuthThrottle, CredentialCache, GenerationBarrier, hashPassword, issueAccessToken, MemoryThrottleStore, revokeCredentials, type TokenSigner } from '@esp/domain'
import { revokeTokens } from '../../src/users/user-service.js'

// No change feed here: every process below learns of revocations through the auth generation
// alone, which is what makes them hold at once (the feed only frees memory early).

/** Signing is the HTTP layer's (JWT); here a readable stand-in that still refuses forgeries. */
const signer: TokenSigner = {
  sign: (claims) => `signed.${claims.sub}.${claims.jti}`,
  verify: (token) => {
    const [mark, sub, jti] = token.split('.')
    return mark === 'signed' && sub !== undefined && jti !== undefined ? { sub, jti } : null
  }
}

const settings = { accountFailures: 3, addressFailures: 100, windowSeconds: 60, lockoutSeconds: 60, maxLockoutSeconds: 60 }

/** One api process: its own pool, cache and throttle. */
function replica (t: { teardown: (fn: () => unknown) => void }, url: string) {
  const database = createDatabase(url, { max: 2, applicationName: 'esp-test-auth' })
  t.teardown(async () => { await database.close() })
  const authenticator = new Authenticator({ database, signer, now: () => new Date() })
  const throttle = new AuthThrottle(new MemoryThrottleStore(() => Date.now()), settings)
  const gate = throttle.gate('10.0.0.7')
  return {
    token: async (token: string) => (await authenticator.token(gate, token))?.id ?? null,
    basic: async (login: string, password: string, address = '10.0.0.7') => (await authenticator.basic(throttle.gate(address), login, password))?.id ?? null,
    authenticator
  }
}

t.test('remembered credentials are trusted only under the current auth generation', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`
    insert into users (username, email, password_hash) values ('ada', 'ada@example.org', ${await hashPassword('first secret')}) returning id`
  const id = user!.id
  const { token } = await issueAccessToken(database, signer, { userId: id, ttlSeconds: 3600, now: new Date() })
  const a = replica(t, database.url)
  const b = replica(t, database.url)
  for (const r of [a, b]) {
    t.equal(await r.token(token), id)
    t.equal(await r.basic('ada', 'first secret'), id)
  }
  t.equal(b.authenticator.cache.size, 2, 'a token and a Basic pair remembered')

  // Changed behind the platform's back (no generation bump): the memory is used, no query, no hash.
  await database.sql`update access_tokens set revoked_at = now() where user_id = ${id}`
  await database.sql`update users set password_hash = ${await hashPassword('second secret')} where id = ${id}`
  t.equal(await b.token(token), id, 'the remembered token is used')
  t.equal(await b.basic('ada', 'first secret'), id, 'the remembered pair is used: no argon2')
  t.equal(await b.basic('ada', 'second secret'), id, 'an unremembered pair is checked for real')

  // The way the platform revokes: in a transaction that bumps the generation. B hears nothing
  // else, yet refuses right after the commit.
  await inTransaction(database, async (tx) => { await revokeTokens(tx, id, new Date()) })
  t.equal(await b.token(token), null, 'the revoked token is refused at once')
  t.equal(await b.basic('ada', 'first secret'), null, 'the old password is refused at once')
  t.equal(await b.basic('ada', 'second secret'), id)
  t.equal(await a.token(token), null)

  t.equal(await a.token('forged.token'), null, 'a forged token is refused without a query')
})

t.test('failures are never remembered: every wrong password goes through the throttle', async (t) => {
  const database = await createTestDatabase(t)
  await database.sql`insert into users (username, email, password_hash) values ('bob', 'bob@example.org', ${await hashPassword('right one')})`
  const b = replica(t, database.url)
  t.ok(await b.basic('bob', 'right one'), 'remembered')
  for (let i = 0; i < 3; i++) t.equal(await b.basic('bob', 'wrong one', `10.0.1.${i}`), null)
  const refused = await b.basic('bob', 'right one', '10.0.1.9').then(() => 0, (err: unknown) => err instanceof ApiError ? err.statusCode : -1)
  t.equal(refused, 429, 'the account locked for strangers is refused to them even with a remembered password')
  t.ok(await b.basic('bob', 'right one'), 'the address it signed in from is not a stranger')
})

t.test('a revocation of another user also makes every entry check again; the check is fresh', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('cy', 'cy@example.org') returning id`
  const { token } = await issueAccessToken(database, signer, { userId: user!.id, ttlSeconds: 3600, now: new Date() })
  const b = replica(t, database.url)
  t.equal(await b.token(token), user!.id)
  await inTransaction(database, async (tx) => { await revokeCredentials(tx, null) })
  t.equal(await b.token(token), user!.id, 'still valid: checked again against the database')
  // An expired token is never answered from memory.
  await database.sql`update access_tokens set expires_at = now() - interval '1 second'`
  await inTransaction(database, async (tx) => { await revokeCredentials(tx, null) })
  t.equal(await b.token(token), null)
})

t.test('the generation barrier: two reads in flight for many callers, each answer from one sent after the caller asked', async (t) => {
  let reads = 0
  const releases: Array<() => void> = []
  const barrier = new GenerationBarrier(async () => {
    const n = ++reads
    await new Promise<void>((resolve) => { releases.push(resolve) })
    return n
  })
  const first = barrier.current()
  const second = barrier.current()
  t.equal(reads, 2, 'a caller arriving while one read is in flight has a second sent at once')
  const waiting = Array.from({ length: 50 }, async () => await barrier.current())
  t.equal(reads, 2, 'never more than two in flight: the others wait')
  releases[0]?.()
  t.equal(await first, 1)
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(reads, 3, 'the callers that came while both were in flight share the next read')
  releases[1]?.()
  releases[2]?.()
  t.equal(await second, 2)
  t.same(new Set(await Promise.all(waiting)), new Set([3]), 'they never take the answer of a read sent before they asked')
})

t.test('the cache is bounded and forgets after its TTL', async (t) => {
  const cache = new CredentialCache({ ttlMs: 1000, maxEntries: 2 })
  const viewer = (id: number) => ({ id, username: `u${id}`, role: 'citizen' as const })
  cache.set('a', viewer(1), 7, 0)
  cache.set('b', viewer(2), 7, 0)
  t.ok(cache.get('a', 7, 10), 'a is now the most recently used')
  cache.set('c', viewer(3), 7, 0)
  t.equal(cache.size, 2)
  t.equal(cache.get('b', 7, 10), undefined, 'the least recently used went')
  t.ok(cache.get('a', 7, 999))
  t.equal(cache.get('a', 7, 1000), undefined, 'gone after the TTL')
  cache.set('d', viewer(4), 7, 0, 500)
  t.equal(cache.get('d', 7, 500), undefined, 'never past the credential\'s own expiry')
  cache.set('e', viewer(5), 7, 0)
  t.equal(cache.get('e', 8, 1), undefined, 'never under another generation')
  t.not(cache.basicKey('x', 'p'), new CredentialCache().basicKey('x', 'p'), 'Basic keys are keyed by a secret of the process')
  t.notMatch(cache.basicKey('x', 'secret password'), /secret/)
})

t.test('an unreadable expiry is not remembered', async (t) => {
  const cache = new CredentialCache({ ttlMs: 1000, maxEntries: 2 })
  cache.set('a', { id: 1, username: 'u', role: 'citizen' }, 1, 0, Number.NaN)
  t.equal(cache.get('a', 1, 1), undefined)
})
