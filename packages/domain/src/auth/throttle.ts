import { isIPv6 } from 'node:net'
import { trimOldest } from '@esp/db'
import { ApiError, errors } from '../errors.js'
import { sha256 } from './secrets.js'

/**
 * Failed credential checks, counted per address and per account (issue 19). One rule for every
 * path that verifies a secret: passwords (sessions, Basic, the OAuth password grant), bearer tokens,
 * OAuth client secrets, password-reset codes, MQTT credentials and device tokens (guessed by
 * publishing under them: `deviceTokenFailure`).
 *
 * - A check is admitted only while its keys are not locked and `failures + checks in flight` is
 *   below the key's limit, so parallel guesses cannot overshoot it. A refusal happens before the
 *   secret is looked at: a locked-out caller is refused even with the right password.
 * - Bearer tokens are the exception to the in-flight count: they are signed and cannot be guessed,
 *   and they ride on every API request, where a client's parallel requests must not be refused.
 *   A bad one still counts, and a locked address is still refused before the token is read.
 * - The limit-th failure within the window locks the key; each further lockout doubles, up to the
 *   maximum. The back-off level is forgotten once the key stays quiet for the maximum lockout.
 * - A success forgets an account's failures (its owner proved who they are), never an address's:
 *   an attacker spraying many accounts, one of them their own, keeps their count.
 */
export interface ThrottleSettings {
  /** failures per account (the username or e-mail tried) within the window */
  accountFailures: number
  /** failures per client address within the window */
  addressFailures: number
  windowSeconds: number
  /** the first lockout; each further one doubles */
  lockoutSeconds: number
  maxLockoutSeconds: number
}

export const DEFAULT_THROTTLE: ThrottleSettings = {
  accountFailures: 10,
  addressFailures: 30,
  windowSeconds: 900,
  lockoutSeconds: 900,
  maxLockoutSeconds: 21_600
}

/** One counted key with its limit; `resetOnSuccess` for accounts, not for addresses. */
export interface ThrottleKey { key: string, limit: number, resetOnSuccess: boolean }

/** What the stores need of the settings, computed once. */
export interface ThrottlePolicy {
  windowMs: number
  /** lockout of the 1st, 2nd, ... strike; the last one repeats */
  lockoutsMs: readonly number[]
  maxLockoutMs: number
  /** a check in flight is forgotten after this, should its process die before settling it */
  pendingMs: number
}

export type Admission = { ok: true } | { ok: false, retryAfterMs: number, reason: 'locked' | 'busy' }
export type Outcome = 'success' | 'failure' | 'release'

/**
 * Where the counts live: in memory or in Redis. Both implement the same mechanics; the numbers
 * come from the policy, so the rule has one home (this file).
 */
export interface ThrottleStore {
  /** refuses when a key is locked, or (reserving) full; a reservation counts one check in flight on every key */
  admit: (keys: readonly ThrottleKey[], policy: ThrottlePolicy, reserve: boolean) => Promise<Admission>
  /** ends a check: a failure counts (and may lock), a success resets the keys that allow it, a release (the check itself broke) only ends it */
  settle: (keys: readonly ThrottleKey[], policy: ThrottlePolicy, outcome: Outcome, reserved: boolean) => Promise<void>
}

export function throttlePolicy (settings: ThrottleSettings): ThrottlePolicy {
  const maxLockoutMs = settings.maxLockoutSeconds * 1000
  const lockoutsMs: number[] = []
  for (let ms = settings.lockoutSeconds * 1000; ; ms *= 2) {
    lockoutsMs.push(Math.min(ms, maxLockoutMs))
    if (ms >= maxLockoutMs || lockoutsMs.length >= 32) break
  }
  return { windowMs: settings.windowSeconds * 1000, lockoutsMs, maxLockoutMs, pendingMs: 60_000 }
}

/** A verification that may be refused first: `check` resolves to the proven thing, or null when the secret is wrong. */
export interface CredentialGate {
  verify: <T>(account: string | undefined, check: () => Promise<T | null>) => Promise<T | null>
  /** a bearer token: no account, no count of checks in flight (see above) */
  verifyToken: <T>(check: () => Promise<T | null>) => Promise<T | null>
}

export class AuthThrottle {
  readonly policy: ThrottlePolicy
  private readonly settings: ThrottleSettings

  constructor (private readonly store: ThrottleStore, settings: ThrottleSettings, private readonly onRefused: (reason: 'locked' | 'busy') => void = () => {}) {
    this.settings = settings
    this.policy = throttlePolicy(settings)
  }

  /** The checks of one caller (its client address). */
  gate (address: string): CredentialGate {
    return {
      verify: async (account, check) => await this.verify(address, account, check),
      verifyToken: async (check) => await this.verify(address, undefined, check, false)
    }
  }

  /** Runs `check` unless the caller is refused (ApiError 429 with Retry-After), and counts its outcome. */
  async verify<T> (address: string, account: string | undefined, check: () => Promise<T | null>, reserve = true): Promise<T | null> {
    const keys = this.keysOf(address, account)
    const admission = await this.store.admit(keys, this.policy, reserve)
    if (!admission.ok) {
      this.onRefused(admission.reason)
      throw errors.tooManyRequests(Math.max(1, Math.ceil(admission.retryAfterMs / 1000)))
    }
    let result: T | null
    try {
      result = await check()
    } catch (err) {
      if (reserve) await this.store.settle(keys, this.policy, 'release', reserve)
      throw err
    }
    const outcome = result === null ? 'failure' : 'success'
    // Unreserved, a success on keys that keep their count changes nothing: no second round trip.
    if (reserve || outcome === 'failure' || keys.some((k) => k.resetOnSuccess)) await this.store.settle(keys, this.policy, outcome, reserve)
    return result
  }

  /**
   * A publish under a device token no device has: a guess at the firmware's one secret (six
   * characters). It counts on a key of its own per address, with the address's limit, so failed
   * logins never stop the kits behind the same address, nor guessed tokens a person's login.
   * Returns how long the address is now locked out of publishing, or 0.
   */
  async deviceTokenFailure (address: string): Promise<number> {
    const keys: ThrottleKey[] = [{ key: `tok:${addressKey(address)}`, limit: this.settings.addressFailures, resetOnSuccess: false }]
    await this.store.settle(keys, this.policy, 'failure', false)
    const admission = await this.store.admit(keys, this.policy, false)
    if (admission.ok) return 0
    this.onRefused(admission.reason)
    return admission.retryAfterMs
  }

  keysOf (address: string, account: string | undefined): ThrottleKey[] {
    const keys: ThrottleKey[] = [{ key: `addr:${addressKey(address)}`, limit: this.settings.addressFailures, resetOnSuccess: false }]
    const name = account === undefined ? '' : normaliseAccount(account)
    // Hashed: fixed size whatever was posted, and no e-mail addresses in Redis.
    if (name !== '') keys.push({ key: `acct:${sha256(name).slice(0, 32)}`, limit: this.settings.accountFailures, resetOnSuccess: true })
    return keys
  }
}

/** Addresses whose guessed tokens are remembered at most, the least recently guessing going first. */
const GUESSING_ADDRESSES = 10_000
/** Distinct tokens remembered for one address: past the limit only while the store cannot lock it. */
const GUESSES_PER_ADDRESS = 1_000

/**
 * Guessed device tokens. A device's token is the firmware's one secret, and a publish under it is
 * its check: a publish under a token no active device has is a failed guess of its address
 * (`deviceTokenFailure` above). Each distinct token counts once, so a kit still posting
 * after its device was archived, which repeats its one token, never locks out the kits behind
 * the same address; an attacker must try a new token each time. The limit-th guess locks the
 * address out of publishing for the lockout: from then on its publishes are refused before any
 * token is looked up. The lock is kept here, so the devices' publishes ask no store.
 */
export class DeviceTokenGuesses {
  private readonly tried = new Map<string, Set<string>>()
  private readonly lockedUntil = new Map<string, number>()

  constructor (private readonly throttle: AuthThrottle, private readonly now: () => number) {}

  /** Asked on every publish: nothing to work out while no address is locked. */
  locked (address: string): boolean {
    if (this.lockedUntil.size === 0) return false
    const key = addressKey(address)
    const until = this.lockedUntil.get(key)
    if (until === undefined) return false
    if (until > this.now()) return true
    this.lockedUntil.delete(key)
    return false
  }

  async failed (address: string, token: string): Promise<void> {
    const key = addressKey(address)
    const tokens = this.tried.get(key) ?? new Set<string>()
    this.tried.delete(key)
    this.tried.set(key, tokens)
    trimOldest(this.tried, GUESSING_ADDRESSES)
    if (tokens.has(token)) return
    if (tokens.size >= GUESSES_PER_ADDRESS) tokens.clear()
    tokens.add(token)
    const lockedMs = await this.throttle.deviceTokenFailure(address)
    if (lockedMs > 0) {
      this.lockedUntil.set(key, this.now() + lockedMs)
      trimOldest(this.lockedUntil, GUESSING_ADDRESSES)
      // After the lockout every token counts again.
      tokens.clear()
    }
  }
}

/** Logins match username or e-mail case-insensitively, so the count does too. */
export function normaliseAccount (account: string): string {
  return account.normalize('NFKC').trim().toLowerCase()
}

/**
 * IPv4 as is (also when mapped into IPv6); IPv6 by its /64, which one subscriber usually holds
 * whole: counting single IPv6 addresses would give an attacker 2^64 budgets.
 */
export function addressKey (ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped !== null) return mapped[1] ?? ip
  if (!isIPv6(ip)) return ip
  const [head = '', tail = ''] = ip.split('%')[0]?.split('::') ?? []
  const left = head === '' ? [] : head.split(':')
  const right = tail === '' ? [] : tail.split(':')
  const groups = ip.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '').toLowerCase()).join(':')}::/64`
}

/** For checks whose failure is a 404 (reset codes): the 404 becomes the null a gate counts. */
export async function nullWhenNotFound<T> (run: () => Promise<T>): Promise<T | null> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof ApiError && err.code === 'ESP_RECORD_NOT_FOUND') return null
    throw err
  }
}
