import { once } from 'node:events'
import type { Redis } from 'ioredis'
import { type Admission, MemoryThrottleStore, type Outcome, type ThrottleKey, type ThrottlePolicy, type ThrottleStore } from '@esp/domain'
import { sharedStateRedis } from './redis.js'

// Each counted key is one Redis hash holding the fields of the memory store's entry
// (throttle-memory.ts): f failures and fu the end of their window, p checks in flight and pu when
// they are forgotten, l the end of the lock, s the back-off level and su when it is forgotten.
// Every decision compares those times with ARGV[1], the caller's clock, so the instances share one
// count under one clock (a test's too); the hash's TTL, the latest of its times, only bounds how
// long Redis keeps it. READ is the entry with its expired parts zeroed, KEEP its TTL afterwards.
const READ = `
local function read (key, now)
  local v = redis.call('HMGET', key, 'f', 'fu', 'p', 'pu', 'l', 's', 'su')
  local e = {}
  for i, name in ipairs({ 'f', 'fu', 'p', 'pu', 'l', 's', 'su' }) do e[name] = tonumber(v[i] or '0') or 0 end
  if e.fu <= now then e.f = 0 end
  if e.pu <= now then e.p = 0 end
  if e.l <= now then e.l = 0 end
  if e.su <= now then e.s = 0 end
  return e
end
local function write (key, e, now)
  if e.f == 0 and e.p == 0 and e.l == 0 and e.s == 0 then
    redis.call('DEL', key)
    return
  end
  redis.call('HSET', key, 'f', e.f, 'fu', e.fu, 'p', e.p, 'pu', e.pu, 'l', e.l, 's', e.s, 'su', e.su)
  redis.call('PEXPIRE', key, math.max(e.fu, e.pu, e.l, e.su, now + 1) - now)
end`

// ARGV: now, reserve (1/0), how long a reservation lives, then each counted key's limit.
const ADMIT = `${READ}
local now = tonumber(ARGV[1])
local locked = 0
for i = 1, #KEYS do
  local lockedUntil = tonumber(redis.call('HGET', KEYS[i], 'l') or '0') or 0
  if lockedUntil - now > locked then locked = lockedUntil - now end
end
if locked > 0 then return {1, locked} end
if ARGV[2] == '0' then return {0, 0} end
local entries = {}
for i = 1, #KEYS do
  local e = read(KEYS[i], now)
  -- Failures so far plus checks still running: parallel guesses cannot pass the limit together.
  if e.f + e.p >= tonumber(ARGV[i + 3]) then return {2, 1000} end
  entries[i] = e
end
for i = 1, #KEYS do
  local e = entries[i]
  e.p = e.p + 1
  e.pu = now + tonumber(ARGV[3])
  write(KEYS[i], e, now)
end
return {0, 0}`

// ARGV: now, outcome (0 release, 1 success, 2 failure), reserved (1/0), window, max lockout, then
// per counted key its limit and reset flag, then the lockout ladder.
const SETTLE = `${READ}
local now = tonumber(ARGV[1])
local outcome = tonumber(ARGV[2])
local windowMs = tonumber(ARGV[4])
local maxLockMs = tonumber(ARGV[5])
local ladder = 6 + #KEYS * 2
local steps = #ARGV - ladder + 1
for i = 1, #KEYS do
  local e = read(KEYS[i], now)
  if ARGV[3] == '1' then e.p = math.max(0, e.p - 1) end
  if outcome == 2 then
    if e.f == 0 then e.fu = now + windowMs end
    e.f = e.f + 1
    if e.f >= tonumber(ARGV[6 + (i - 1) * 2]) then
      e.s = e.s + 1
      local lockMs = tonumber(ARGV[ladder + math.min(e.s, steps) - 1])
      e.l = now + lockMs
      e.su = now + lockMs + maxLockMs
      e.f = 0
    end
  elseif outcome == 1 and ARGV[7 + (i - 1) * 2] == '1' then
    e.f = 0
    e.s = 0
    e.l = 0
  end
  write(KEYS[i], e, now)
end
return 0`

const OUTCOMES: Record<Outcome, string> = { release: '0', success: '1', failure: '2' }

type Scripted = Redis & {
  espThrottleAdmit: (...args: Array<string | number>) => Promise<[number, number]>
  espThrottleSettle: (...args: Array<string | number>) => Promise<number>
}

// Named apart from the four string keys per counted key of earlier versions, which expire alone.
const redisKeys = (keys: readonly ThrottleKey[]): string[] => keys.map(({ key }) => `esp-auth:{${key}}:c`)

/** The counts shared by every instance: one atomic script per admission and per outcome, on `now`'s clock. */
export class RedisThrottleStore implements ThrottleStore {
  private readonly redis: Scripted

  constructor (redis: Redis, private readonly now: () => number = Date.now) {
    redis.defineCommand('espThrottleAdmit', { lua: ADMIT })
    redis.defineCommand('espThrottleSettle', { lua: SETTLE })
    this.redis = redis as Scripted
  }

  async admit (keys: readonly ThrottleKey[], policy: ThrottlePolicy, reserve: boolean): Promise<Admission> {
    const all = redisKeys(keys)
    const [state, ms] = await this.redis.espThrottleAdmit(all.length, ...all, this.now(), reserve ? '1' : '0', policy.pendingMs, ...keys.map((k) => k.limit))
    if (state === 0) return { ok: true }
    return { ok: false, retryAfterMs: ms, reason: state === 1 ? 'locked' : 'busy' }
  }

  async settle (keys: readonly ThrottleKey[], policy: ThrottlePolicy, outcome: Outcome, reserved: boolean): Promise<void> {
    const all = redisKeys(keys)
    await this.redis.espThrottleSettle(all.length, ...all, this.now(), OUTCOMES[outcome], reserved ? '1' : '0', policy.windowMs, policy.maxLockoutMs,
      ...keys.flatMap((k) => [k.limit, k.resetOnSuccess ? '1' : '0']), ...policy.lockoutsMs)
  }

  async remember (key: string, ttlMs: number): Promise<void> {
    // The value is when the mark ends on the callers' clock; the TTL only bounds its life in Redis.
    await this.redis.set(`esp-auth:{${key}}:k`, String(this.now() + ttlMs), 'PX', ttlMs)
  }

  async remembers (key: string): Promise<boolean> {
    const until = await this.redis.get(`esp-auth:{${key}}:k`)
    if (until === null) return false
    // '1': a mark of an earlier version, which kept only the TTL.
    return until === '1' || Number(until) > this.now()
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
    store: new FallbackThrottleStore(new RedisThrottleStore(redis, options.now), memory, warn),
    close: async () => { await redis.quit().catch(() => { redis.disconnect() }) }
  }
}
