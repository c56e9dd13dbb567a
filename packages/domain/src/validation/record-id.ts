import { errors } from '../errors.js'

/**
 * A record's id as a path or query names it: digits that fit an int4, or null. The one reading of
 * `:id` for every resource; a value that is not one names no record (a 404, never a 400).
 */
export const recordId = (raw: string | number): number | null =>
  typeof raw === 'number' ? (Number.isInteger(raw) && raw >= 0 ? raw : null) : /^\d{1,9}$/.test(raw) ? Number(raw) : null

/** The id, or the 404 of `what` that it cannot name. */
export function recordIdOr404 (what: string, raw: string | number): number {
  const id = recordId(raw)
  if (id === null) throw errors.notFound(what, String(raw))
  return id
}

/**
 * The listed values of a comma-separated query parameter (`sensor_ids`, `device_ids`), trimmed,
 * without blanks and repeats; a 400 past `max` of them.
 */
export function listParam (name: string, value: string | undefined, max: number, items: string): string[] {
  const listed = [...new Set((value ?? '').split(',').map((item) => item.trim()).filter((item) => item !== ''))]
  if (listed.length > max) throw errors.badRequest(`${name} lists ${listed.length} ${items}; at most ${max} are answered at once`, { [name]: [`has more than ${max} items`] })
  return listed
}
