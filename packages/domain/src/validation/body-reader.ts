import { errors, type FieldErrors } from '../errors.js'

export type Body = Record<string, unknown>

/** Every id column is PostgreSQL's int4: a larger id names no record and would fail the query. */
export const ID_MAX = 2_147_483_647

/** A record id as bodies send it (a JSON number or digits in a string), or null when it is none. */
export function toId (value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d{1,10}\s*$/.test(value) ? Number(value) : Number.NaN
  return Number.isInteger(n) && n >= 1 && n <= ID_MAX ? n : null
}

/** A request body as an object; anything else (an array, a string) reads as empty. */
export const asBody = (raw: unknown): Body => typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw as Body : {}

/**
 * Reads the fields of a write body leniently, as clients send them (form strings, JSON values,
 * the Python client's "True"), and collects one message list per field: every resource's writes
 * answer 422 naming each bad field, in the established platform's wording.
 */
export class BodyReader {
  readonly errors: FieldErrors = {}

  /** `creating`: required fields must be present, not only non-blank when sent. */
  constructor (readonly body: Body, private readonly creating = false) {}

  add (field: string, message: string): void { (this.errors[field] ??= []).push(message) }
  has (field: string): boolean { return this.body[field] !== undefined }

  /** Trimmed text; blank is null, or "can't be blank" when required. */
  text (field: string, options: { max?: number, required?: boolean } = {}): string | null | undefined {
    const { max = 5000, required = false } = options
    const value = this.body[field]
    if (value === undefined) {
      if (required && this.creating) this.add(field, "can't be blank")
      return undefined
    }
    if (value !== null && typeof value !== 'string') { this.add(field, 'must be a string'); return undefined }
    const text = value === null ? '' : value.trim()
    if (text === '') {
      if (required) this.add(field, "can't be blank")
      return required ? undefined : null
    }
    if (text.length > max) { this.add(field, `is too long (maximum is ${max} characters)`); return undefined }
    return text
  }

  /** Booleans as JSON booleans, 1/0, or the strings true/false/1/0 in any case. */
  bool (field: string): boolean | undefined {
    const value = this.body[field]
    if (value === undefined || value === null || value === '') return undefined
    if (typeof value === 'boolean') return value
    if (value === 1 || value === 0) return value === 1
    if (typeof value === 'string' && /^(true|false|1|0)$/i.test(value.trim())) return /^(true|1)$/i.test(value.trim())
    this.add(field, 'must be true or false')
    return undefined
  }

  /** A number within [min, max]; blank or null clears it. */
  number (field: string, min: number, max: number): number | null | undefined {
    const value = this.body[field]
    if (value === undefined) return undefined
    if (value === null || value === '') return null
    const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*-?\d+(\.\d+)?([eE][-+]?\d+)?\s*$/.test(value) ? Number(value) : Number.NaN
    if (!Number.isFinite(n)) { this.add(field, 'is not a number'); return undefined }
    if (n < min || n > max) { this.add(field, `must be between ${min} and ${max}`); return undefined }
    return n
  }

  /** A record id (positive integer); blank or null clears it. */
  id (field: string): number | null | undefined {
    const value = this.body[field]
    if (value === undefined) return undefined
    if (value === null || value === '') return null
    const id = toId(value)
    if (id === null) { this.add(field, 'must be an id'); return undefined }
    return id
  }

  /**
   * A list of record ids (an array, or one id) from the first of `fields` that is sent (a form's
   * `ids[]` after `ids`); an empty one is []. Reported under the first name.
   */
  ids (fields: [string, ...string[]], message: string): number[] | undefined {
    const field = fields.find((f) => this.body[f] !== undefined && this.body[f] !== null)
    if (field === undefined) return undefined
    const raw = this.body[field]
    const list = Array.isArray(raw) ? raw : raw === '' ? [] : [raw]
    const ids: number[] = []
    for (const item of list) {
      const id = toId(item)
      if (id === null) { this.add(fields[0], message); return undefined }
      ids.push(id)
    }
    return ids
  }

  /** 422 with every collected message, if any. */
  check (): void {
    if (Object.keys(this.errors).length > 0) throw errors.unprocessable(this.errors)
  }
}
