import { createHmac, randomBytes } from 'node:crypto'
import { safeEqual } from './secrets.js'

/** What a password check knows of the account a login names, before the password is looked at. */
export interface LoginAccount {
  id: number
  /** binds device cookies to the current password: a change or reset makes them all worthless */
  passwordHash: string | null
}

/** The cookie of one account (a browser may hold one per account it signs in to). */
export const deviceCookieName = (userId: number): string => `esp_device_${userId}`

/**
 * Device cookies (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): proof that a
 * client signed in to an account before, so its failed attempts count apart from everyone
 * else's and an attacker's lockout of the account does not keep it out. The value is
 * `nonce.expires.signature`, the signature an HMAC over the account id, the nonce, the expiry and
 * the account's password hash. Stateless: nothing is stored, and a password change or reset
 * voids every cookie of the account, so cookies minted with a stolen password do not outlive it.
 * A cookie grants no access: the password is still checked.
 */
export class DeviceCookies {
  private readonly key: Buffer

  constructor (secret: string | Buffer, private readonly now: () => number, readonly ttlSeconds: number) {
    // Derived: the secret may sign other things (JWTs); this key signs only device cookies.
    this.key = createHmac('sha256', secret).update('esp device cookie v1').digest()
  }

  issue (account: LoginAccount): string {
    const nonce = randomBytes(16).toString('base64url')
    const expires = Math.floor(this.now() / 1000) + this.ttlSeconds
    return `${nonce}.${expires}.${this.sign(account, nonce, expires)}`
  }

  /** The cookie's nonce when it is this account's, unexpired and made under its current password; else undefined. */
  verify (value: string | undefined, account: LoginAccount): string | undefined {
    if (value === undefined || value.length > 200) return undefined
    const [nonce, expiresText, signature, extra] = value.split('.')
    if (nonce === undefined || expiresText === undefined || signature === undefined || extra !== undefined || !/^\d{1,12}$/.test(expiresText)) return undefined
    const expires = Number(expiresText)
    if (expires * 1000 <= this.now()) return undefined
    return safeEqual(signature, this.sign(account, nonce, expires)) ? nonce : undefined
  }

  /** A keyed hash, so the identifiers people type (e-mail addresses) are not kept readable, nor guessable from a list. */
  keyed (text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url').slice(0, 32)
  }

  private sign (account: LoginAccount, nonce: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${account.id}.${nonce}.${expires}.`).update(account.passwordHash ?? '').digest('base64url')
  }
}
