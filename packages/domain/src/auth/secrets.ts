import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { hash, verify } from '@node-rs/argon2'
import { concurrencyLimit } from '@esp/db'

/** Opaque random secret, URL-safe. */
export const randomSecret = (bytes = 32): string => randomBytes(bytes).toString('base64url')

/** Tokens are high-entropy, so a fast hash is enough to keep a leaked table useless. */
export const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex')

export function safeEqual (a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/**
 * Argon2 runs at most this many at once in a process. Each holds its 19 MiB of memory while it
 * runs: four at once (libuv's pool) raised the process's peak by 56 MB, and the hashes are CPU
 * bound, so on these two-core machines more at once did not finish sooner. The rest wait in order.
 */
const ARGON2_AT_ONCE = 2
const argon2Slots = concurrencyLimit(ARGON2_AT_ONCE)
const withArgon2Slot = argon2Slots.run

/** How many argon2 runs hold memory now (tests, metrics). */
export const argon2Running = (): number => argon2Slots.running()

/** Passwords: argon2id (memory-hard), with the library's OWASP-level defaults. */
export const hashPassword = async (password: string): Promise<string> => await withArgon2Slot(async () => await hash(password))

let dummyHash: Promise<string> | undefined

/** Verifies; an unknown account still costs one verification, so timing does not reveal it. */
export async function verifyPassword (stored: string | null | undefined, password: string): Promise<boolean> {
  if (stored === null || stored === undefined) {
    dummyHash ??= hashPassword('dummy password for timing')
    const dummy = await dummyHash
    await withArgon2Slot(async () => await verify(dummy, password)).catch(() => false)
    return false
  }
  return await withArgon2Slot(async () => await verify(stored, password)).catch(() => false)
}
