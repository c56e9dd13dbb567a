import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { hash, verify } from '@node-rs/argon2'

/** Opaque random secret, URL-safe. */
export const randomSecret = (bytes = 32): string => randomBytes(bytes).toString('base64url')

/** Tokens are high-entropy, so a fast hash is enough to keep a leaked table useless. */
export const sha256 = (value: string): string => createHash('sha256').update(value).digest('hex')

export function safeEqual (a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** Passwords: argon2id (memory-hard), with the library's OWASP-level defaults. */
export const hashPassword = async (password: string): Promise<string> => await hash(password)

let dummyHash: Promise<string> | undefined

/** Verifies; an unknown account still costs one verification, so timing does not reveal it. */
export async function verifyPassword (stored: string | null | undefined, password: string): Promise<boolean> {
  if (stored === null || stored === undefined) {
    dummyHash ??= hash('dummy password for timing')
    await verify(await dummyHash, password).catch(() => false)
    return false
  }
  return await verify(stored, password).catch(() => false)
}
