import { createHash, randomBytes } from 'node:crypto'
import t from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { startApiReplicas } from '@esp/test-helpers/process'

// Issue 20: credentials are remembered in each api process, yet a revocation made through one
// replica holds in every other one by the time the revoking request has returned. Two real api
// processes on one database; each round first makes both remember the credentials, then revokes
// through A and asks B at once.

const ROUNDS = 5

const basic = (login: string, password: string): string => `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}`

t.test('a password change or reset through one api process holds at once in another', async (t) => {
  const database = await createTestDatabase(t)
  // Each round makes a few deliberate failures; the throttle is not what is tested here.
  const [baseA = '', baseB = ''] = await startApiReplicas(t, database.url, { AUTH_FAILURES_PER_ADDRESS: '10000', AUTH_FAILURES_PER_ACCOUNT: '10000' })
  t.not(baseA, baseB)

  const json = { 'content-type': 'application/json' }
  const status = async (base: string, authorization: string): Promise<number> => (await fetch(`${base}/v0/me`, { headers: { authorization } })).status
  const logIn = async (username: string, password: string): Promise<string> => {
    const session = await fetch(`${baseA}/v0/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ username, password }) })
    t.equal(session.status, 200, 'logged in')
    return (await session.json() as { access_token: string }).access_token
  }
  /** Both processes accept (and so remember) the token and the Basic pair, twice each. */
  const rememberedEverywhere = async (token: string, username: string, password: string): Promise<void> => {
    for (let i = 0; i < 2; i++) {
      for (const base of [baseA, baseB]) {
        t.equal(await status(base, `Bearer ${token}`), 200)
        t.equal(await status(base, basic(username, password)), 200)
      }
    }
  }

  const username = 'revoker'
  let password = 'password zero'
  const signup = await fetch(`${baseA}/v0/users`, { method: 'POST', headers: json, body: JSON.stringify({ username, email: 'revoker@example.org', password }) })
  t.equal(signup.status, 201)
  const [user] = await database.sql<{ id: number }[]>`select id from users where username = ${username}`

  for (let round = 1; round <= ROUNDS; round++) {
    const token = await logIn(username, password)
    await rememberedEverywhere(token, username, password)
    const next = `password change ${round}`
    const changed = await fetch(`${baseA}/v0/me`, { method: 'PATCH', headers: { ...json, authorization: `Bearer ${token}` }, body: JSON.stringify({ password: next }) })
    t.equal(changed.status, 200, `round ${round}: password changed through A`)
    // Nothing in between: B answers right after A's response returned.
    t.equal(await status(baseB, `Bearer ${token}`), 401, `round ${round}: the token is refused by B`)
    t.equal(await status(baseB, basic(username, password)), 401, `round ${round}: the old password is refused by B`)
    t.equal(await status(baseA, `Bearer ${token}`), 401, `round ${round}: and by A`)
    password = next
    t.equal(await status(baseB, basic(username, password)), 200, `round ${round}: the new password works on B`)
  }

  for (let round = 1; round <= ROUNDS; round++) {
    const token = await logIn(username, password)
    await rememberedEverywhere(token, username, password)
    // The code the reset e-mail would carry (the exporter's job stores its hash, as here).
    const code = randomBytes(32).toString('base64url')
    await database.sql`insert into password_resets (user_id, token_hash, expires_at)
      values (${user!.id}, ${createHash('sha256').update(code).digest('hex')}, now() + interval '1 hour')`
    const next = `password reset ${round}`
    const reset = await fetch(`${baseA}/v0/password_resets/${code}`, { method: 'PATCH', headers: json, body: JSON.stringify({ password: next }) })
    t.equal(reset.status, 200, `reset ${round}: password reset through A`)
    t.equal(await status(baseB, `Bearer ${token}`), 401, `reset ${round}: the token is refused by B`)
    t.equal(await status(baseB, basic(username, password)), 401, `reset ${round}: the old password is refused by B`)
    password = next
    t.equal(await status(baseB, basic(username, password)), 200, `reset ${round}: the new password works on B`)
  }

  // Archiving the account (DELETE /me) through B: A refuses its token and its password at once.
  const token = await logIn(username, password)
  await rememberedEverywhere(token, username, password)
  t.equal((await fetch(`${baseB}/v0/me`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status < 300, true, 'archived through B')
  t.equal(await status(baseA, `Bearer ${token}`), 401, 'the token is refused by A')
  t.equal(await status(baseA, basic(username, password)), 401, 'the password is refused by A')
})
