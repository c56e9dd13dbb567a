import type { FieldErrors } from '../errors.js'
import { countryName } from '../geo/country.js'

export interface UserInput {
  email?: string | undefined
  username?: string | undefined
  password?: string | undefined
  city?: string | null | undefined
  country_code?: string | null | undefined
  url?: string | null | undefined
  first_name?: string | null | undefined
  last_name?: string | null | undefined
}

export const PASSWORD_MIN = 8
/** argon2 cost grows with input; a cap keeps a login from becoming a denial of service. */
export const PASSWORD_MAX = 256
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/
/** No @ (logins accept username or e-mail), no whitespace or slashes (it is a URL segment). */
const USERNAME = /^[^@\s/\\?#%]+$/

function add (errors: FieldErrors, field: string, message: string): void {
  (errors[field] ??= []).push(message)
}

/**
 * Checks user fields; `creating` makes email, username and password required. Messages follow the
 * established platform's wording, which clients show as they are (`errors.username[0]`).
 */
export function validateUserInput (input: UserInput, creating: boolean): FieldErrors {
  const errors: FieldErrors = {}
  const { email, username, password } = input
  if (creating || email !== undefined) {
    if (email === undefined || email.trim() === '') add(errors, 'email', "can't be blank")
    else if (!EMAIL.test(email.trim()) || email.length > 254) add(errors, 'email', 'is invalid')
  }
  if (creating || username !== undefined) {
    if (username === undefined || username.trim() === '') add(errors, 'username', "can't be blank")
    else {
      const name = username.trim()
      if (name.length < 3) add(errors, 'username', 'is too short (minimum is 3 characters)')
      if (name.length > 30) add(errors, 'username', 'is too long (maximum is 30 characters)')
      if (!USERNAME.test(name)) add(errors, 'username', 'is invalid')
      else if (/^\d+$/.test(name)) add(errors, 'username', 'cannot be only digits')
    }
  }
  if (creating || password !== undefined) {
    if (password === undefined || password === '') add(errors, 'password', "can't be blank")
    else if (password.length < PASSWORD_MIN) add(errors, 'password', `is too short (minimum is ${PASSWORD_MIN} characters)`)
    else if (password.length > PASSWORD_MAX) add(errors, 'password', `is too long (maximum is ${PASSWORD_MAX} characters)`)
  }
  const code = input.country_code
  if (code !== undefined && code !== null && code !== '' && countryName(code) === null) add(errors, 'country_code', 'is not a country code (ISO 3166-1 alpha-2)')
  const url = input.url
  if (url !== undefined && url !== null && url !== '') {
    let ok = false
    try {
      const parsed = new URL(url)
      ok = (parsed.protocol === 'http:' || parsed.protocol === 'https:') && url.length <= 2048
    } catch { ok = false }
    if (!ok) add(errors, 'url', 'is not an http or https URL')
  }
  for (const field of ['city', 'first_name', 'last_name'] as const) {
    const value = input[field]
    if (typeof value === 'string' && value.length > 255) add(errors, field, 'is too long (maximum is 255 characters)')
  }
  return errors
}

/** Blank optional text is stored as null, never as "". */
export const blankToNull = (value: string | null | undefined): string | null | undefined =>
  value === undefined ? undefined : value === null || value.trim() === '' ? null : value.trim()
