import { once } from 'node:events'
import type { Redis } from 'ioredis'
import { type Admission, MemoryThrottleStore, type Outcome, type ThrottleKey, type ThrottlePolicy, type ThrottleStore } from '@esp/domain'
import { sharedStateRedis } from './redis.js'

// Each counted key owns four Redis keys: failures in the window, checks in flight, the lock, and
// the back-off level. KEYS holds them in that order, four per counted key. ARGV: reserve (1/0),
// how long a reservation lives, then each counted key's limit. A remembered key (an address an
// account signed in from) is one more, `:k`, that only expires.
const ADMIT = `
local n = #KEYS / 4
local locked = 0
for i = 0, n - 1 do
  local ttl = redis.call('PTTL', KEYS[i * 4 + 3])
  if ttl > locked then locked = ttl end
end
if locked > 0 then return {1, locked} end
if ARGV[1] == '0' then return {0, 0} end
for i = 0, n - 1 do
  local failures = tonumber(redis.call('GET', KEYS[i * 4 + 1]) or '0')
  local pending = tonumber(redis.call('GET', KEYS[i * 4 + 2]) or '0')
  if failures + pending >= tonumber(ARGV[i + 3]) then return {2, 1000} end
end
for i = 0, n - 1 do
  redis.call('INCR', KEYS[i * 4 + 2])
  redis.call('PEXPIRE', KEYS[i * 4 + 2], ARGV[2])
end
return {0, 0}`

// ARGV: outcome (0 release, 1 success, 2 failure), reserved (1/0), window, max lockout, then per
// counted key its limit and reset flag, then the lockout ladder.
const SETTLE = `
local n = #KEYS / 4
local outcome = tonumber(ARGV[1])
local windowMs = tonumber(ARGV[3])
local maxLockMs = tonumber(ARGV[4])
local ladder = 5 + n * 2
local steps = #ARGV - ladder + 1
for i = 0, n - 1 do
  local f, p, l, s = KEYS[i * 4 + 1], KEYS[i * 4 + 2], KEYS[i * 4 + 3], KEYS[i * 4 + 4]
  if ARGV[2] == '1' and tonumber(redis.call('GET', p) or '0') > 0 then redis.call('DECR', p) end
  if outcome == 2 then
    local failures = redis.call('INCR', f)
    if failures == 1 then redis.call('PEXPIRE', f, windowMs) end
    if failures >= tonumber(ARGV[5 + i * 2]) then
      local strikes = redis.call('INCR', s)
      local lockMs = tonumber(ARGV[ladder + math.min(strikes, steps) - 1])
      redis.call('SET', l, '1', 'PX', lockMs)
      redis.call('PEXPIRE', s, lockMs + maxLockMs)
      redis.call('DEL', f)
    end
  elseif outcome == 1 and ARGV[6 + i * 2] == '1' then
    redis.call('DEL', f, s, l)
  end
end
return 0`

const OUTCOMES: Record<Outcome, string> = { release: '0', success: '1', failure: '2' }

type Scripted = Redis & {
  espThrottleAdmit: (...args: Array<string | number>) => Promise<[number, number]>
  espThrottleSettle: (...args: Array<string | number>) => Promise<number>
}

const redisKeys = (keys: readonly ThrottleKey[]): string[] =>
  // The braces keep a key's four parts in one cluster slot.
  keys.flatMap(({ key }) => ['f', 'p', 'l', 's'].map((part) => `esp-auth:{${key}}:${part}`))

/** The counts shared by every instance: one atomic script per admission and per outcome. */
export class RedisThrottleStore implements ThrottleStore {
  private readonly redis: Scripted

  constructor (redis: Redis) {
    redis.defineCommand('espThrottleAdmit', { lua: ADMIT })
    redis.defineCommand('espThrottleSettle', { lua: SETTLE })
    this.redis = redis as Scripted
  }

  async admit (keys: readonly ThrottleKey[], policy: ThrottlePolicy, reserve: boolean): Promise<Admission> {
    const all = redisKeys(keys)
    const [state, ms] = await this.redis.espThrottleAdmit(all.length, ...all, reserve ? '1' : '0', policy.pendingMs, ...keys.map((k) => k.limit))
    if (state === 0) return { ok: true }
    return { ok: false, retryAfterMs: ms, reason: state === 1 ? 'locked' : 'busy' }
  }

  async settle (keys: readonly ThrottleKey[], policy: ThrottlePolicy, outcome: Outcome, reserved: boolean): Promise<void> {
    const all = redisKeys(keys)
    await this.redis.espThrottleSettle(all.length, ...all, OUTCOMES[outcome], reserved ? '1' : '0', policy.windowMs, policy.maxLockoutMs,
      ...keys.flatMap((k) => [k.limit, k.resetOnSuccess ? '1' : '0']), ...policy.lockoutsMs)
  }

  async remember (key: string, ttlMs: number): Promise<void> {
    await this.redis.set(`esp-auth:{${key}}:k`, '1', 'PX', ttlMs)
  }

  async remembers (key: string): Promise<boolean> {
    return await this.redis.exists(`esp-auth:{${key}}:k`) === 1
  }
}

/**
 * Redis first; while it fails, this process's own memory. Fail-closed would let a Redis outage
 * refuse every login and every token; fail-open would let guessing run unchecked while Redis is
 * down (which an attacker may cause). Counting locally keeps logins up and still bounds guessing,
 * to the limit times the number of instances.
 */
export class FallbackThrottleStore implements ThrottleStore {
  constructor (private readonly primary: ThrottleStore, private readonly secondary: ThrottleStore, private readonly onError: (err: unknown) => void) {}

  async admit (keys: readonly ThrottleKey[], policy: ThrottlePolicy, reserve: boolean): Promise<Admission> {
    try {
      return await this.primary.admit(keys, policy, reserve)
    } catch (err) {
      this.onError(err)
      return await this.secondary.admit(keys, policy, reserve)
    }
  }

  async settle (keys: readonly ThrottleKey[], policy: ThrottlePolicy, outcome: Outcome, reserved: boolean): Promise<void> {
    try {
      await this.primary.settle(keys, policy, outcome, reserved)
    } catch (err) {
      this.onError(err)
      await this.secondary.settle(keys, policy, outcome, reserved)
    }
  }

  async remember (key: string, ttlMs: number): Promise<void> {
    try {
      await this.primary.remember(key, ttlMs)
    } catch (err) {
      this.onError(err)
      await this.secondary.remember(key, ttlMs)
    }
  }

  async remembers (key: string): Promise<boolean> {
    try {
      return await this.primary.remembers(key)
    } catch (err) {
      this.onError(err)
      return await this.secondary.remembers(key)
    }
  }
}

export interface ThrottleStoreHandle {
  store: ThrottleStore
  close: () => Promise<void>
}

/** The store for REDIS_URL (with the local fallback), or memory alone. */
export async function createThrottleStore (options: { redisUrl: string | undefined, now: () => number, warn: (err: unknown) => void }): Promise<ThrottleStoreHandle> {
  const memory = new MemoryThrottleStore(options.now)
  if (options.redisUrl === undefined) return { store: memory, close: async () => {} }
  const { redis, warn } = sharedStateRedis(options.redisUrl, options.warn)
  // Counted in memory until the first connection is up; a start is not held up by an outage.
  await Promise.race([once(redis, 'ready'), new Promise((resolve) => setTimeout(resolve, 2000).unref())]).catch(() => undefined)
  return {
    store: new FallbackThrottleStore(new RedisThrottleStore(redis), memory, warn),
    close: async () => { await redis.quit().catch(() => { redis.disconnect() }) }
  }
}
