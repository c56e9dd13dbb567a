const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })
/** Region codes ICU names that are not countries. */
const NOT_COUNTRIES = new Set(['ZZ', 'EU', 'EZ', 'UN', 'QO', 'XA', 'XB'])

/** English country name for an ISO 3166-1 alpha-2 code, or null when the code is not a country. */
export function countryName (code: string | null | undefined): string | null {
  if (code === null || code === undefined || !/^[A-Za-z]{2}$/.test(code)) return null
  const upper = code.toUpperCase()
  if (NOT_COUNTRIES.has(upper)) return null
  try {
    return names.of(upper) ?? null
  } catch {
    return null
  }
}
