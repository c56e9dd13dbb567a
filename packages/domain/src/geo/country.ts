const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })
/** Region codes ICU names that are not countries. */
const NOT_COUNTRIES = new Set(['ZZ', 'EU', 'EZ', 'UN', 'QO', 'XA', 'XB'])

/** English country name for an ISO 3166-1 alpha-2 code, or null when the code is not a country. */
export function countryName (code: string | null | undefined): string | null {
  if (code === null || code === undefined || !/^[A-Za-z]{2}$/.test(code)) return null
  const upper = code.toUpperCase()
  let name = known.get(upper)
  if (name === undefined) known.set(upper, name = lookUp(upper))
  return name
}

/** Names by code, looked up once each: every device shows its country (at most 676 codes). */
const known = new Map<string, string | null>()

function lookUp (upper: string): string | null {
  if (NOT_COUNTRIES.has(upper)) return null
  try {
    return names.of(upper) ?? null
  } catch {
    return null
  }
}
