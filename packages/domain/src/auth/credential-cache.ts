import { createHmac, randomBytes } from 'node:crypto'
import { type ChangeSubscriber, findTokenHolder, type Generations, type Handle, trimOldest } from '@esp/db'
import { GenerationBarrier, generations } from '../generations.js'
import { sha256, verifyPassword } from './secrets.js'
import type { CredentialGate } from './throttle.js'
import { findLogin, type LoginRow, type TokenSigner } from './tokens.js'
import type { Viewer } from './viewer.js'

/**
 * Verified credentials remembered in the process (issue 20), so a valid bearer token costs no
 * token query and the same Basic credentials no argon2 hash per request.
 *
 * Design and guarantee:
 * - Every transaction that revokes or changes credentials bumps the one-row `auth_generation`
 *   (`revokeCredentials` in revocation.ts) and sends an `auth` change notification. The bump
 *   commits with the revocation, so it is visible to every snapshot taken after the revoking
 *   request returned.
 * - Before a remembered entry is trusted, the process reads the generation with a query *sent
 *   after the request arrived* (`GenerationBarrier`), and the entry counts only if it was verified
 *   under that same generation. So a request that reaches any replica after a revocation returned
 *   is checked against the database again: the revocation holds everywhere at once, without
 *   waiting for NOTIFY, which reaches other processes some time later (or never, while their
 *   listening connection is down).
 * - The generation read is shared: every request waiting when one is sent gets its answer, so
 *   under load a replica sends about one per round trip, not one per request: "at most one cheap
 *   lookup" per request, and most requests share it.
 * - An entry is verified under the generation read *before* its full check, so a revocation that
 *   commits during the check leaves it stale at once.
 * - The notification only frees memory early (and a reconnect of the feed clears everything); it
 *   is not needed for correctness.
 * - Entries live at most `ttlMs` (and never past the token's own expiry), in a bounded LRU keyed
 *   by the token's SHA-256 or, for Basic, an HMAC-SHA256 of login and password under a secret of
 *   this process: neither the token nor the password is kept. Failures are never remembered, so
 *   every wrong secret still goes through the throttle and the full check.
 */

interface Entry { viewer: Viewer, generation: number, expiresAtMs: number, passwordHash: string | null }

export interface CredentialCacheOptions {
  /** how long a verified credential is remembered at most */
  ttlMs: number
  /** entries kept at most; the least recently used goes first */
  maxEntries: number
}

export const DEFAULT_CREDENTIAL_CACHE: CredentialCacheOptions = { ttlMs: 30_000, maxEntries: 10_000 }

export class CredentialCache {
  private readonly entries = new Map<string, Entry>()
  private readonly secret = randomBytes(32)

  constructor (private readonly options: CredentialCacheOptions = DEFAULT_CREDENTIAL_CACHE) {}

  /** The key of Basic credentials: keyed, so a memory dump does not give a fast offline guess. */
  basicKey (login: string, password: string): string {
    return 'basic:' + createHmac('sha256', this.secret).update(login).update('\0').update(password).digest('base64url')
  }

  /** The viewer remembered under `key`, when it was verified under `generation` and is still fresh. */
  get (key: string, generation: number, nowMs: number): Viewer | undefined {
    return this.entry(key, generation, nowMs)?.viewer
  }

  /**
   * The viewer remembered under `key` while fresh, whatever generation it was verified under, and
   * that generation: for a read whose own statement reads the current one (Authenticator.remembered).
   */
  peek (key: string, nowMs: number): { viewer: Viewer, generation: number } | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined || entry.expiresAtMs <= nowMs) return undefined
    return { viewer: entry.viewer, generation: entry.generation }
  }

  /** The account of remembered Basic credentials, for the password gate (it binds device cookies to the hash). */
  login (key: string, generation: number, nowMs: number): LoginRow | undefined {
    const entry = this.entry(key, generation, nowMs)
    return entry === undefined ? undefined : { id: entry.viewer.id, passwordHash: entry.passwordHash, viewer: entry.viewer }
  }

  /** Remembers a credential verified under `generation` (read before the check), until `expiresAtMs` at the latest. */
  set (key: string, viewer: Viewer, generation: number, nowMs: number, expiresAtMs = Infinity, passwordHash: string | null = null): void {
    this.entries.delete(key)
    // An expiry that cannot be read is not remembered: NaN would never compare as past.
    if (Number.isNaN(expiresAtMs)) return
    this.entries.set(key, { viewer, generation, expiresAtMs: Math.min(expiresAtMs, nowMs + this.options.ttlMs), passwordHash })
    trimOldest(this.entries, this.options.maxEntries)
  }

  private entry (key: string, generation: number, nowMs: number): Entry | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    this.entries.delete(key)
    if (entry.generation !== generation || entry.expiresAtMs <= nowMs) return undefined
    // Re-inserted: a Map keeps insertion order, so the first key is the least recently used.
    this.entries.set(key, entry)
    return entry
  }

  /** A user's credentials changed (a change notification): forget them now rather than at the next check. */
  forgetUser (userId: number): void {
    for (const [key, entry] of this.entries) if (entry.viewer.id === userId) this.entries.delete(key)
  }

  clear (): void {
    this.entries.clear()
  }

  get size (): number {
    return this.entries.size
  }
}

/** What a token or Basic check needs beyond the cache. */
export interface AuthenticatorDeps {
  /** the pool's own handle (a Database): its generation barrier is the pool's (generations.ts) */
  database: Handle
  signer: TokenSigner
  now: () => Date
  cache?: CredentialCache
}

/**
 * Bearer tokens and Basic credentials, remembered as described at the top of this file. Each check
 * runs through the caller's throttle gate, hits included, and every failure is counted: a token
 * is checked first and a valid one always passes; a Basic password follows the rules for
 * passwords, so a remembered pair is refused to a stranger while its account is locked.
 */
export class Authenticator {
  readonly cache: CredentialCache
  private readonly barrier: GenerationBarrier<Generations>

  constructor (private readonly deps: AuthenticatorDeps) {
    this.cache = deps.cache ?? new CredentialCache()
    this.barrier = generations(deps.database)
  }

  /** The caller behind a bearer token, or null when it is forged, expired, revoked or its user is gone. */
  async token (gate: CredentialGate, token: string): Promise<Viewer | null> {
    return await gate.verifyToken(async () => {
      if (token === '' || token.length > 4096) return null
      const key = 'token:' + sha256(token)
      const generation = (await this.barrier.current()).auth
      const nowMs = this.deps.now().getTime()
      const known = this.cache.get(key, generation, nowMs)
      if (known !== undefined) return known
      if (this.deps.signer.verify(token) === null) return null
      const row = await findTokenHolder(this.deps.database, key.slice(6), new Date(nowMs).toISOString())
      if (row === undefined) return null
      const viewer: Viewer = { id: row.id, username: row.username, role: row.role }
      this.cache.set(key, viewer, generation, nowMs, row.expiresAt === null ? Infinity : new Date(row.expiresAt).getTime())
      return viewer
    })
  }

  /**
   * The caller behind a token remembered from an earlier check, and the auth generation it was
   * checked under, without reading the current one: for routes whose own statement reads it after
   * the request arrived (the kept reads, DESIGN.md Read) and send nothing before they compare it.
   * A different generation there means `token` must run; undefined means it must run now.
   */
  remembered (token: string): { viewer: Viewer, generation: number } | undefined {
    if (token === '' || token.length > 4096) return undefined
    return this.cache.peek('token:' + sha256(token), this.deps.now().getTime())
  }

  /**
   * The user whose login and password these are, or null; the same pair costs one argon2 hash per
   * generation and TTL, and no query. A password like any other: the gate's rules for accounts apply.
   */
  async basic (gate: CredentialGate, login: string | undefined, password: string): Promise<Viewer | null> {
    // No login at all is no password check: a failure of the address, at no hash's cost.
    if (login === undefined) return await gate.verify(undefined, async () => null)
    const key = this.cache.basicKey(login, password)
    const nowMs = this.deps.now().getTime()
    let generation = 0
    let remembered = false
    const signedIn = await gate.password(login, async () => {
      generation = (await this.barrier.current()).auth
      const known = this.cache.login(key, generation, nowMs)
      remembered = known !== undefined
      return known ?? await findLogin(this.deps.database, login)
    }, async (account) => remembered && account !== undefined ? true : await verifyPassword(account?.passwordHash, password))
    if (signedIn === null) return null
    if (!remembered) this.cache.set(key, signedIn.account.viewer, generation, nowMs, Infinity, signedIn.account.passwordHash)
    return signedIn.account.viewer
  }

  /** For the change feed: a user's credentials changed, or (reset) notifications may have been missed. */
  subscriber (): ChangeSubscriber {
    return {
      change: (payload) => {
        const userId = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload.userId : undefined
        if (typeof userId === 'number') this.cache.forgetUser(userId)
        else this.cache.clear()
      },
      reset: () => { this.cache.clear() }
    }
  }
}
