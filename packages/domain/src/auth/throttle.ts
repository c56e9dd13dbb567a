import { randomBytes } from 'node:crypto'
import { isIPv6 } from 'node:net'
import { trimOldest } from '@esp/db'
import { ApiError, errors } from '../errors.js'
import { DeviceCookies, type LoginAccount } from './device-trust.js'
import { sha256 } from './secrets.js'

/**
 * Failed credential checks (issues 19 and 34). One rule for every path that verifies a secret,
 * in three kinds:
 *
 * - A person's password (`password`: sessions, Basic, the OAuth password grant). One account,
 *   one counter: the login is resolved first and the failures count against the account, whether
 *   it was named by username or by e-mail. The owner is told apart from strangers as OWASP's
 *   device-cookie pattern does: a client holding a valid device cookie of the account
 *   (device-trust.ts), or calling from an address the account signed in from (for clients that
 *   keep no cookies), counts its failures under that cookie or address only, with its own small
 *   limit; everyone else counts against the address, the identifier typed and the account. So an
 *   attacker can lock the account for strangers only, and the owner still signs in, while the
 *   guesses at one account stay bounded: the account's limit for all strangers together, plus a
 *   trusted client's limit for each client that already signed in. An unknown login counts as
 *   an account of its own, and a stranger naming a locked account by an identifier that has not
 *   reached the limit itself gets a wrong-password answer (at a check's cost) rather than 429:
 *   no answer tells whether an account exists or which identifiers belong to it.
 * - A secret the platform issued (`verifyToken`: access tokens, reset codes, OAuth client
 *   secrets): too long to guess, so it is checked first (cheaply, by hash) and a valid
 *   one always passes; only failures count, per address, and a locked address gets 429 for its
 *   failures only. Someone else's stale tokens behind the same NAT never refuse a valid one.
 * - Any other secret (`verify`: MQTT forwarding credentials, the metrics token): refused while its
 *   address or name is locked, before it is looked at, and counted.
 *
 * Mechanics, the same in both stores: a check is admitted only while its keys are not locked and
 * `failures + checks in flight` is below each key's limit, so parallel guesses cannot overshoot;
 * the limit-th failure within the window locks the key, each further lockout twice as long up to
 * the maximum; the back-off level is forgotten once the key stays quiet for the maximum lockout.
 * A success forgets an account's failures (its owner proved who they are), never an address's:
 * an attacker spraying many accounts, one of them their own, keeps their count.
 */
export interface ThrottleSettings {
  /** failures per account (of strangers: clients with no device cookie of it, from addresses it never signed in from) within the window */
  accountFailures: number
  /** failures per client address within the window */
  addressFailures: number
  windowSeconds: number
  /** the first lockout; each further one doubles */
  lockoutSeconds: number
  maxLockoutSeconds: number
  /** failures of one trusted client of an account (its device cookie, or an address it signed in from) within the window */
  deviceFailures?: number
  /** how long a device cookie, and an address an account signed in from, are trusted */
  trustSeconds?: number
}

export const DEFAULT_THROTTLE: Required<ThrottleSettings> = {
  accountFailures: 10,
  addressFailures: 30,
  windowSeconds: 900,
  lockoutSeconds: 900,
  maxLockoutSeconds: 21_600,
  deviceFailures: 5,
  trustSeconds: 7_776_000
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
  /** marks `key` for `ttlMs` (an address an account signed in from) */
  remember: (key: string, ttlMs: number) => Promise<void>
  /** whether `key` is marked */
  remembers: (key: string) => Promise<boolean>
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

/** A password check that passed: the account, and a fresh device cookie for the client. */
export interface SignedIn<A extends LoginAccount> { account: A, deviceCookie: string }

/** The checks of one caller: each resolves to the proven thing, or null when the secret is wrong. */
export interface CredentialGate {
  /** a secret that is no person's password and that the platform did not issue (MQTT forwarding credentials, the metrics token) */
  verify: <T>(account: string | undefined, check: () => Promise<T | null>) => Promise<T | null>
  /** a secret the platform issued: a valid one always passes */
  verifyToken: <T>(check: () => Promise<T | null>) => Promise<T | null>
  /**
   * A person's password for the account `login` names: `find` resolves the login (undefined when
   * no account has it), `check` tells whether the password is the account's and, for undefined,
   * must cost what a real check costs and say false.
   */
  password: <A extends LoginAccount>(login: string, find: () => Promise<A | undefined>, check: (account: A | undefined) => Promise<boolean>) => Promise<SignedIn<A> | null>
}

/** The device cookie a client sent for an account, if any. */
export type DeviceCookieOf = (userId: number) => string | undefined

export interface AuthThrottleOptions {
  /** signs device cookies and keys the identifiers typed; replicas must share it (derived from JWT_SECRET) */
  secret?: string | Buffer
  now?: () => number
}

export class AuthThrottle {
  readonly policy: ThrottlePolicy
  readonly deviceCookies: DeviceCookies
  private readonly settings: Required<ThrottleSettings>

  constructor (private readonly store: ThrottleStore, settings: ThrottleSettings, private readonly onRefused: (reason: 'locked' | 'busy') => void = () => {}, options: AuthThrottleOptions = {}) {
    this.settings = { ...DEFAULT_THROTTLE, ...settings }
    this.policy = throttlePolicy(settings)
    // Without a shared secret (a process alone, counting in memory) a secret of its own will do.
    this.deviceCookies = new DeviceCookies(options.secret ?? randomBytes(32), options.now ?? Date.now, this.settings.trustSeconds)
  }

  /** The checks of one caller (its client address, and the device cookies it sent). */
  gate (address: string, deviceCookie: DeviceCookieOf = () => undefined): CredentialGate {
    return {
      verify: async (account, check) => await this.verify(address, account, check),
      verifyToken: async (check) => await this.verifyToken(address, check),
      password: async (login, find, check) => await this.password(address, login, find, check, deviceCookie)
    }
  }

  /** Runs `check` unless the caller is refused (ApiError 429 with Retry-After), and counts its outcome. */
  async verify<T> (address: string, account: string | undefined, check: () => Promise<T | null>): Promise<T | null> {
    const keys = this.keysOf(address, account)
    await this.admit(keys, true)
    return await this.run(keys, check)
  }

  /**
   * A platform-issued secret: checked first, so a valid one passes whatever else came from its
   * address; a wrong one counts for the address (on a key of its own: stale tokens do not lock
   * the sign-ins behind a NAT) and, once the address is locked, is answered 429.
   */
  async verifyToken<T> (address: string, check: () => Promise<T | null>): Promise<T | null> {
    const result = await check()
    if (result !== null) return result
    const keys: ThrottleKey[] = [{ key: `secret:${addressKey(address)}`, limit: this.settings.addressFailures, resetOnSuccess: false }]
    await this.admit(keys, false)
    await this.store.settle(keys, this.policy, 'failure', false)
    return null
  }

  /** A person's password (see the top of this file); throws 429 when the caller is refused. */
  async password<A extends LoginAccount> (address: string, login: string, find: () => Promise<A | undefined>, check: (account: A | undefined) => Promise<boolean>, deviceCookie: DeviceCookieOf = () => undefined): Promise<SignedIn<A> | null> {
    const account = await find()
    const typed = this.deviceCookies.keyed(normaliseAccount(login))
    // An unknown login is an account of its own, keyed by what was typed: every step below is
    // the same whether or not the account exists, and so are the answers.
    const accountKey = account === undefined ? `user:?${typed}` : `user:${account.id}`
    const knownKey = `${accountKey}@${addressKey(address)}`
    const nonce = account === undefined ? undefined : this.deviceCookies.verify(deviceCookie(account.id), account)
    const known = nonce === undefined && await this.store.remembers(knownKey)
    let ok: boolean
    if (nonce !== undefined || known) {
      // The owner's browser or address: its own count, its own lockout; strangers' do not apply.
      const keys: ThrottleKey[] = [{ key: nonce !== undefined ? `device:${accountKey}:${nonce}` : `device:${knownKey}`, limit: this.settings.deviceFailures, resetOnSuccess: true }]
      await this.admit(keys, true)
      ok = await this.run(keys, async () => await check(account) ? true : null) !== null
    } else {
      const stranger: ThrottleKey[] = [
        { key: `addr:${addressKey(address)}`, limit: this.settings.addressFailures, resetOnSuccess: false },
        { key: `login:${typed}`, limit: this.settings.accountFailures, resetOnSuccess: true }
      ]
      await this.admit(stranger, true)
      const accountKeys: ThrottleKey[] = [{ key: accountKey, limit: this.settings.accountFailures, resetOnSuccess: true }]
      let admission: Admission
      try {
        admission = await this.store.admit(accountKeys, this.policy, true)
      } catch (err) {
        await this.store.settle(stranger, this.policy, 'release', true)
        throw err
      }
      if (!admission.ok) {
        // Locked through another identifier of the account: answered as a wrong password, at a
        // check's cost, and counted under what was typed, as for a login no account has. A 429
        // here would tell that the two identifiers are one account (an e-mail's owner).
        this.onRefused('locked')
        await this.run(stranger, async () => await check(undefined) ? true : null)
        return null
      }
      ok = await this.run([...stranger, ...accountKeys], async () => await check(account) ? true : null) !== null
    }
    if (!ok || account === undefined) return null
    if (!known) await this.store.remember(knownKey, this.settings.trustSeconds * 1000)
    return { account, deviceCookie: this.deviceCookies.issue(account) }
  }

  /**
   * The owner proved who they are another way (a reset code from their mailbox): the account's
   * lockout for strangers ends, the address becomes known, and the client gets a device cookie.
   */
  async proven (address: string, account: LoginAccount & { username: string, email: string }): Promise<string> {
    const keys: ThrottleKey[] = [account.username, account.email].map((login) =>
      ({ key: `login:${this.deviceCookies.keyed(normaliseAccount(login))}`, limit: this.settings.accountFailures, resetOnSuccess: true }))
    keys.push({ key: `user:${account.id}`, limit: this.settings.accountFailures, resetOnSuccess: true })
    await this.store.settle(keys, this.policy, 'success', false)
    await this.store.remember(`user:${account.id}@${addressKey(address)}`, this.settings.trustSeconds * 1000)
    return this.deviceCookies.issue(account)
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

  /** Refuses (ApiError 429 with Retry-After) when a key is locked or, reserving, full. */
  private async admit (keys: readonly ThrottleKey[], reserve: boolean): Promise<void> {
    const admission = await this.store.admit(keys, this.policy, reserve)
    if (admission.ok) return
    this.onRefused(admission.reason)
    throw errors.tooManyRequests(Math.max(1, Math.ceil(admission.retryAfterMs / 1000)))
  }

  /** Runs an admitted (reserved) check and settles its keys with the outcome. */
  private async run<T> (keys: readonly ThrottleKey[], check: () => Promise<T | null>): Promise<T | null> {
    let result: T | null
    try {
      result = await check()
    } catch (err) {
      await this.store.settle(keys, this.policy, 'release', true)
      throw err
    }
    await this.store.settle(keys, this.policy, result === null ? 'failure' : 'success', true)
    return result
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
