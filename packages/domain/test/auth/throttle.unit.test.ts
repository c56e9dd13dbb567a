import t from 'tap'
import { addressKey, ApiError, AuthThrottle, MemoryThrottleStore, normaliseAccount, throttlePolicy, type ThrottleSettings } from '@esp/domain'

const SETTINGS: ThrottleSettings = { accountFailures: 3, addressFailures: 5, windowSeconds: 60, lockoutSeconds: 60, maxLockoutSeconds: 240 }

function harness (settings = SETTINGS) {
  let now = Date.parse('2026-11-25T12:00:00Z')
  const store = new MemoryThrottleStore(() => now)
  const refusals: string[] = []
  const throttle = new AuthThrottle(store, settings, (reason) => { refusals.push(reason) })
  // The secret is 'right'; a check answers whether it was given.
  const attempt = async (password: string, account: string | undefined = 'ada', address = '10.0.0.1'): Promise<number> => {
    try {
      return await throttle.verify(address, account, async () => password === 'right' ? 'ok' : null) === null ? 401 : 200
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 429) return 429
      throw err
    }
  }
  return { store, throttle, attempt, refusals, advance: (ms: number) => { now += ms } }
}

async function retryAfter (run: () => Promise<unknown>): Promise<number> {
  try {
    await run()
  } catch (err) {
    if (err instanceof ApiError) return Number(err.headers['retry-after'])
  }
  return NaN
}

t.test('the limit-th failure locks the account; the right password is then refused without being checked', async (t) => {
  const { throttle, attempt, refusals } = harness()
  t.same([await attempt('a'), await attempt('b'), await attempt('c')], [401, 401, 401])
  let checked = false
  const seconds = await retryAfter(async () => await throttle.verify('10.0.0.9', 'ADA ', async () => { checked = true; return 'ok' }))
  t.equal(seconds, 60, 'Retry-After is the lockout, from any address, whatever the case of the name')
  t.notOk(checked, 'the check never ran')
  t.same(refusals, ['locked'])
  t.equal(await attempt('right', 'bob'), 200, 'another account from the same address is fine')
})

t.test('after the lockout it works again; each further lockout doubles up to the maximum', async (t) => {
  const { attempt, advance, throttle } = harness()
  t.same(throttlePolicy(SETTINGS).lockoutsMs, [60_000, 120_000, 240_000])
  const lockouts: number[] = []
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < 3; i++) t.equal(await attempt('wrong'), 401)
    lockouts.push(await retryAfter(async () => await throttle.verify('10.0.0.2', 'ada', async () => 'ok')))
    advance(lockouts.at(-1)! * 1000 - 1)
    t.equal(await attempt('right'), 429, 'still locked a millisecond before the end')
    advance(1)
  }
  t.same(lockouts, [60, 120, 240, 240])
  t.equal(await attempt('right'), 200, 'the right password works once the lockout is over')
})

t.test('failures spread out over more than the window do not lock', async (t) => {
  const { attempt, advance } = harness()
  for (let i = 0; i < 10; i++) {
    t.equal(await attempt('wrong'), 401)
    advance(31_000)
  }
  t.equal(await attempt('right'), 200)
})

t.test('a success resets the account, never the address', async (t) => {
  const { attempt } = harness()
  // The attacker sprays other accounts and logs into their own between guesses.
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) {
    statuses.push(await attempt('wrong', `victim${i}`))
    statuses.push(await attempt('right', 'mine'))
  }
  statuses.push(await attempt('wrong', 'victim9'), await attempt('right', 'mine'))
  t.same(statuses, [401, 200, 401, 200, 401, 200, 401, 200, 401, 429], 'the address locks at its 5th failure, successes between notwithstanding')
  const owner = harness()
  t.same([await owner.attempt('typo'), await owner.attempt('typo'), await owner.attempt('right'), await owner.attempt('typo'), await owner.attempt('typo'), await owner.attempt('right')],
    [401, 401, 200, 401, 401, 200], 'the owner who gets it right starts over')
})

t.test('parallel guesses cannot pass the limit together', async (t) => {
  const { throttle } = harness({ ...SETTINGS, accountFailures: 3, addressFailures: 100 })
  let checks = 0
  const slow = async (): Promise<null> => { checks++; await new Promise((resolve) => setTimeout(resolve, 20)); return null }
  const results = await Promise.allSettled(Array.from({ length: 50 }, async (_, i) => await throttle.verify(`10.1.0.${i}`, 'ada', slow)))
  t.equal(checks, 3, 'only as many checks ran as the account allows')
  t.equal(results.filter((r) => r.status === 'rejected').length, 47)
})

t.test('issued secrets (tokens, codes): checked first, so a valid one always passes; bad ones slow their address only', async (t) => {
  const { throttle, attempt } = harness()
  const gate = throttle.gate('10.0.0.1')
  const slow = async (valid: boolean): Promise<string | null> => { await new Promise((resolve) => setTimeout(resolve, 10)); return valid ? 'viewer' : null }
  const good = await Promise.all(Array.from({ length: 50 }, async () => await gate.verifyToken(async () => await slow(true))))
  t.equal(good.filter((v) => v === 'viewer').length, 50, 'a client\'s parallel requests all pass')
  for (let i = 0; i < 5; i++) t.equal(await gate.verifyToken(async () => await slow(false)), null)
  t.equal(await retryAfter(async () => await gate.verifyToken(async () => await slow(false))), 60, 'the address is locked for bad ones')
  t.equal(await gate.verifyToken(async () => await slow(true)), 'viewer', 'a valid one from the locked address still passes')
  t.equal(await attempt('right', 'someone'), 200, 'and stale tokens do not lock the sign-ins behind the address')
})

t.test('a check that breaks is neither a failure nor a success', async (t) => {
  const { throttle, attempt } = harness()
  for (let i = 0; i < 5; i++) await t.rejects(throttle.verify('10.0.0.1', 'ada', async () => { throw new Error('database down') }), { message: 'database down' })
  t.same([await attempt('a'), await attempt('b'), await attempt('right')], [401, 401, 200])
})

t.test('memory stays bounded under a flood of distinct names and addresses', async (t) => {
  let now = 0
  const store = new MemoryThrottleStore(() => now, 1000)
  const throttle = new AuthThrottle(store, SETTINGS)
  for (let i = 0; i < 5000; i++) await throttle.verify(`10.${i >> 16 & 255}.${i >> 8 & 255}.${i & 255}`, `name${i}`, async () => null)
  t.ok(store.size <= 1000, `${store.size} entries`)
  now += 2 * 240_000 + 60_000
  await throttle.verify('10.9.9.9', 'x', async () => null)
  for (let i = 0; i < 1024; i++) await throttle.verify('10.9.9.8', undefined, async () => 'ok')
  t.ok(store.size <= 3, `expired entries are swept (${store.size} left)`)
})

t.test('keys: IPv6 by its /64, mapped IPv4 as IPv4, names case-insensitive', async (t) => {
  t.equal(addressKey('2001:db8:1:2:3:4:5:6'), addressKey('2001:0db8:0001:0002:ffff::1'))
  t.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64')
  t.not(addressKey('2001:db8:0:1::1'), addressKey('2001:db8:0:2::1'))
  t.equal(addressKey('::ffff:192.0.2.1'), '192.0.2.1')
  t.equal(addressKey('192.0.2.1'), '192.0.2.1')
  t.equal(normaliseAccount(' Ada@Example.ORG '), 'ada@example.org')
})

// Issue 34: passwords. Two accounts: ada (by username or e-mail) exists, bob does not.
const ADA = { id: 1, passwordHash: 'argon2-hash-of-ada' }
const DEVICE: ThrottleSettings = { ...SETTINGS, deviceFailures: 2, trustSeconds: 3600 }

function passwords (settings = DEVICE) {
  let now = Date.parse('2026-11-25T12:00:00Z')
  const store = new MemoryThrottleStore(() => now)
  const refusals: string[] = []
  const throttle = new AuthThrottle(store, settings, (reason) => { refusals.push(reason) }, { secret: 'a secret of at least thirty-two characters', now: () => now })
  let account = { ...ADA }
  const checked: Array<number | undefined> = []
  /** A sign-in: 200 (with the device cookie it got), 401 for a wrong password, 429 when refused. */
  const signIn = async (login: string, password: string, options: { address?: string, cookie?: string | undefined } = {}): Promise<{ status: number, cookie?: string }> => {
    try {
      const result = await throttle.password(options.address ?? '10.0.0.1', login,
        async () => ['ada', 'ada@example.org'].includes(login.trim().toLowerCase()) ? account : undefined,
        async (found) => { checked.push(found?.id); return found !== undefined && password === 'right' },
        (id) => id === account.id ? options.cookie : undefined)
      return result === null ? { status: 401 } : { status: 200, cookie: result.deviceCookie }
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 429) return { status: 429 }
      throw err
    }
  }
  let addresses = 0
  const stranger = (): string => `192.0.2.${++addresses}`
  return { throttle, store, signIn, stranger, checked, refusals, advance: (ms: number) => { now += ms }, changePassword: () => { account = { ...account, passwordHash: 'another hash' } } }
}

t.test('one account, one counter: username and e-mail count together, from any address', async (t) => {
  const { signIn, stranger, checked } = passwords()
  const statuses = []
  for (const login of ['ada', 'ADA@example.org', ' Ada ']) statuses.push((await signIn(login, 'wrong', { address: stranger() })).status)
  t.same(statuses, [401, 401, 401], 'three guesses, each checked')
  t.equal(checked.filter((id) => id === ADA.id).length, 3)
  const owner = await signIn('ada@example.org', 'right', { address: stranger() })
  t.equal(owner.status, 401, 'the account is locked for strangers: the right password by e-mail is not checked')
  t.equal(checked.at(-1), undefined, 'only the stand-in check ran')
  t.equal((await signIn('ada', 'right', { address: stranger() })).status, 401, 'nor by username')
  t.equal((await signIn('ada', 'right', { address: stranger() })).status, 429, 'once the identifier typed reaches the limit itself, a 429, as for a login no account has')
})

t.test('an existing and a missing account answer alike, identifier by identifier', async (t) => {
  const sequence = ['{u}', '{e}', '{u}', '{e}', '{u}', '{e}', '{u}', '{e}', '{u}', '{e}', '{u}', '{e}', '{u}']
  const answers = async (user: string, email: string): Promise<number[]> => {
    const { signIn, stranger } = passwords()
    const statuses: number[] = []
    for (const step of sequence) statuses.push((await signIn(step === '{u}' ? user : email, 'wrong', { address: stranger() })).status)
    return statuses
  }
  const existing = await answers('ada', 'ada@example.org')
  t.same(existing, await answers('bob', 'bob@example.org'), `the same answers: ${existing.join(' ')}`)
  t.same(existing.slice(0, 6), [401, 401, 401, 401, 401, 401])
  t.same(existing.slice(-2), [429, 429])
})

t.test('the owner\'s device cookie: signs in while strangers are locked out; its own limit locks only it', async (t) => {
  const { signIn, stranger, checked, changePassword } = passwords()
  const first = await signIn('ada', 'right', { address: '10.9.0.1' })
  t.equal(first.status, 200)
  t.match(first.cookie, /^[\w-]{22}\.\d+\.[\w-]{43}$/, 'nonce, expiry and signature')
  for (let i = 0; i < 3; i++) await signIn('ada', 'wrong', { address: stranger() })
  t.equal((await signIn('ada', 'right', { address: stranger() })).status, 429, 'strangers are locked out')
  const owner = await signIn('ada', 'right', { address: stranger(), cookie: first.cookie })
  t.equal(owner.status, 200, 'the owner, from a new address, with the cookie')
  t.not(owner.cookie, first.cookie, 'and gets a fresh cookie')
  t.equal((await signIn('ada', 'wrong', { cookie: first.cookie, address: stranger() })).status, 401)
  t.equal((await signIn('ada', 'wrong', { cookie: first.cookie, address: stranger() })).status, 401)
  t.equal((await signIn('ada', 'right', { cookie: first.cookie, address: stranger() })).status, 429, 'the cookie locks at its own limit')
  t.equal((await signIn('ada', 'right', { cookie: owner.cookie, address: stranger() })).status, 200, 'another cookie of the owner is not affected')
  const forged = `${first.cookie?.slice(0, -3) ?? ''}AAA`
  const before = checked.length
  t.equal((await signIn('ada', 'right', { cookie: forged, address: stranger() })).status, 429, 'a forged cookie is a stranger')
  t.equal(checked.length, before, 'not checked')
  changePassword()
  t.equal((await signIn('ada', 'right', { cookie: owner.cookie, address: stranger() })).status, 429, 'a new password voids the cookies made under the old one')
})

t.test('an address the account signed in from is trusted like a cookie, for clients that keep none', async (t) => {
  const { signIn, stranger, advance } = passwords()
  t.equal((await signIn('ada', 'right', { address: '10.7.0.1' })).status, 200)
  for (let i = 0; i < 3; i++) await signIn('ada', 'wrong', { address: stranger() })
  t.equal((await signIn('ada', 'right', { address: stranger() })).status, 429, 'strangers are locked out')
  t.equal((await signIn('ada@example.org', 'right', { address: '10.7.0.1' })).status, 200, 'the owner\'s address is not')
  t.same([(await signIn('ada', 'x', { address: '10.7.0.1' })).status, (await signIn('ada', 'y', { address: '10.7.0.1' })).status, (await signIn('ada', 'right', { address: '10.7.0.1' })).status],
    [401, 401, 429], 'with its own limit')
  advance(3600 * 1000)
  t.equal((await signIn('ada', 'right', { address: '10.7.0.1' })).status, 200, 'after the lockouts, the trust has lapsed, and the owner signs in as a stranger would')
})

t.test('guessing stays bounded per account: strangers together, plus each trusted client on its own', async (t) => {
  const { signIn, stranger, checked } = passwords()
  for (let i = 0; i < 60; i++) await signIn(i % 2 === 0 ? 'ada' : 'ADA@EXAMPLE.ORG', `guess ${i}`, { address: stranger() })
  t.equal(checked.filter((id) => id === ADA.id).length, 3, 'sixty guesses from sixty addresses, three checked')
})

t.test('a proven owner (reset code) ends strangers\' lockout and is trusted', async (t) => {
  const { throttle, signIn, stranger } = passwords()
  for (let i = 0; i < 6; i++) await signIn(i % 2 === 0 ? 'ada' : 'ada@example.org', 'wrong', { address: stranger() })
  t.equal((await signIn('ada', 'right', { address: stranger() })).status, 429)
  const cookie = await throttle.proven('10.5.0.1', { ...ADA, username: 'ada', email: 'ada@example.org' })
  t.equal((await signIn('ada', 'right', { address: stranger(), cookie })).status, 200, 'with the cookie it got')
  t.equal((await signIn('ada@example.org', 'right', { address: stranger() })).status, 200, 'and strangers\' lockout is over')
})
