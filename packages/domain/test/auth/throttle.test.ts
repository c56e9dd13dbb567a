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

t.test('bearer tokens: parallel good ones are never refused; bad ones still lock the address', async (t) => {
  const { throttle, attempt } = harness()
  const gate = throttle.gate('10.0.0.1')
  const slow = async (valid: boolean): Promise<string | null> => { await new Promise((resolve) => setTimeout(resolve, 10)); return valid ? 'viewer' : null }
  const good = await Promise.all(Array.from({ length: 50 }, async () => await gate.verifyToken(async () => await slow(true))))
  t.equal(good.filter((v) => v === 'viewer').length, 50, 'a client\'s parallel requests all pass')
  for (let i = 0; i < 5; i++) t.equal(await gate.verifyToken(async () => await slow(false)), null)
  t.equal(await retryAfter(async () => await gate.verifyToken(async () => await slow(true))), 60, 'the address is locked, for tokens too')
  t.equal(await attempt('right', 'someone'), 429, 'and for passwords')
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
