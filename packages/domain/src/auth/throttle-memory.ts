import { trimOldest } from '@esp/db'
import type { Admission, Outcome, ThrottleKey, ThrottlePolicy, ThrottleStore } from './throttle.js'

interface Entry {
  failures: number
  failuresUntil: number
  pending: number
  pendingUntil: number
  lockedUntil: number
  strikes: number
  strikesUntil: number
}

const empty = (): Entry => ({ failures: 0, failuresUntil: 0, pending: 0, pendingUntil: 0, lockedUntil: 0, strikes: 0, strikesUntil: 0 })

/**
 * The counts of one process (no REDIS_URL), with the mechanics of the Redis store. Bounded: an
 * entry lives only as long as its latest expiry, expired ones are swept as writes go by, and past
 * `maxEntries` the least recently touched go first, so a flood of distinct addresses or names
 * costs at most `maxEntries` entries (about 100 bytes each). Remembered keys (known addresses)
 * are bounded the same way, apart, so a flood of failures cannot push them out.
 */
export class MemoryThrottleStore implements ThrottleStore {
  private readonly entries = new Map<string, Entry>()
  /** remembered keys (addresses accounts signed in from) and when they are forgotten, least recently remembered first */
  private readonly marks = new Map<string, number>()
  private writes = 0

  constructor (private readonly now: () => number, private readonly maxEntries = 100_000) {}

  get size (): number { return this.entries.size + this.marks.size }

  async admit (keys: readonly ThrottleKey[], policy: ThrottlePolicy, reserve: boolean): Promise<Admission> {
    return this.admitNow(keys, policy, reserve, this.now())
  }

  async settle (keys: readonly ThrottleKey[], policy: ThrottlePolicy, outcome: Outcome, reserved: boolean): Promise<void> {
    const now = this.now()
    for (const { key, limit, resetOnSuccess } of keys) {
      const entry = this.read(key, now)
      if (reserved) entry.pending = Math.max(0, entry.pending - 1)
      if (outcome === 'failure') {
        if (entry.failures === 0) entry.failuresUntil = now + policy.windowMs
        entry.failures++
        if (entry.failures >= limit) {
          entry.strikes++
          const lockMs = policy.lockoutsMs[Math.min(entry.strikes, policy.lockoutsMs.length) - 1] ?? policy.maxLockoutMs
          entry.lockedUntil = now + lockMs
          entry.strikesUntil = now + lockMs + policy.maxLockoutMs
          entry.failures = 0
        }
      } else if (outcome === 'success' && resetOnSuccess) {
        entry.failures = 0
        entry.strikes = 0
        entry.lockedUntil = 0
      }
      this.write(key, entry, now)
    }
  }

  async remember (key: string, ttlMs: number): Promise<void> {
    this.marks.delete(key)
    this.marks.set(key, this.now() + ttlMs)
    trimOldest(this.marks, this.maxEntries)
  }

  async remembers (key: string): Promise<boolean> {
    const until = this.marks.get(key)
    if (until === undefined) return false
    if (until > this.now()) return true
    this.marks.delete(key)
    return false
  }

  private admitNow (keys: readonly ThrottleKey[], policy: ThrottlePolicy, reserve: boolean, now: number): Admission {
    let lockedMs = 0
    for (const { key } of keys) lockedMs = Math.max(lockedMs, (this.entries.get(key)?.lockedUntil ?? 0) - now)
    if (lockedMs > 0) return { ok: false, retryAfterMs: lockedMs, reason: 'locked' }
    if (!reserve) return { ok: true }
    const entries = keys.map(({ key }) => this.read(key, now))
    // Failures so far plus checks still running: parallel guesses cannot pass the limit together.
    if (keys.some(({ limit }, i) => (entries[i]?.failures ?? 0) + (entries[i]?.pending ?? 0) >= limit)) return { ok: false, retryAfterMs: 1000, reason: 'busy' }
    keys.forEach(({ key }, i) => {
      const entry = entries[i] ?? empty()
      entry.pending++
      entry.pendingUntil = now + policy.pendingMs
      this.write(key, entry, now)
    })
    return { ok: true }
  }

  /** The entry with its expired parts zeroed. */
  private read (key: string, now: number): Entry {
    const entry = this.entries.get(key) ?? empty()
    if (entry.failuresUntil <= now) entry.failures = 0
    if (entry.pendingUntil <= now) entry.pending = 0
    if (entry.lockedUntil <= now) entry.lockedUntil = 0
    if (entry.strikesUntil <= now) entry.strikes = 0
    return entry
  }

  private write (key: string, entry: Entry, now: number): void {
    // Re-inserted at the end: the Map's order is then least recently touched first.
    this.entries.delete(key)
    if (entry.failures === 0 && entry.pending === 0 && entry.lockedUntil === 0 && entry.strikes === 0) return
    this.entries.set(key, entry)
    trimOldest(this.entries, this.maxEntries)
    // A full pass now and then, not per write: amortised, a flood costs O(1) a write.
    if (++this.writes % 1024 === 0) this.sweep(now)
  }

  private sweep (now: number): void {
    for (const [key, entry] of this.entries) {
      if (Math.max(entry.failuresUntil, entry.pendingUntil, entry.lockedUntil, entry.strikesUntil) <= now) this.entries.delete(key)
    }
  }
}
