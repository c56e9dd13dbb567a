import { type Handle, searchHits, searchTotal } from '@esp/db'
import { errors } from '../errors.js'
import type { Viewer } from '../auth/viewer.js'
import { visibility } from '../devices/device-access.js'
import { countryName } from '../geo/country.js'
import { pictureUrl } from '../users/user-presenter.js'

const MAX_QUERY = 200
const MAX_TERMS = 10

/**
 * The words of a query as a prefix tsquery (`'barc':* & 'sensor':*`): letters and digits only, so
 * nothing the caller types can be tsquery syntax; folded like the indexed documents in SQL.
 */
export function prefixQuery (q: string): string | null {
  const terms = q.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((t) => t !== '').slice(0, MAX_TERMS)
  return terms.length === 0 ? null : terms.map((t) => `'${t}':*`).join(' & ')
}

/**
 * `GET /search?q=`: tags by name, then devices and users by full-text rank (name, description and
 * city; username and city), one query with the total. Private devices only for their owner and
 * admins, archived records never.
 */
export async function search (h: Handle, q: string | undefined, page: { page: number, perPage: number }, viewer: Viewer | null, baseUrl: string) {
  const text = (q ?? '').trim()
  if (text === '') throw errors.parameterMissing(['q'])
  if (text.length > MAX_QUERY) throw errors.badRequest(`q must be at most ${MAX_QUERY} characters`, { q: [`is too long (maximum is ${MAX_QUERY} characters)`] })
  const query = prefixQuery(text)
  if (query === null) return { total: 0, items: [] }
  const terms = { query, like: `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%` }
  const v = visibility(viewer)
  const rows = await searchHits(h, terms, { limit: page.perPage, offset: (page.page - 1) * page.perPage }, v)
  // Past the end no row carries the window count.
  const total = rows[0]?.total ?? (page.page === 1 ? 0 : await searchTotal(h, terms, v))
  const items = rows.map((r) => {
    const country = countryName(r.country_code)
    if (r.kind === 'Tag') return { id: r.id, type: 'Tag', name: r.name, description: r.description, url: `${baseUrl}/v0/devices?with_tags=${encodeURIComponent(r.name ?? '')}` }
    if (r.kind === 'Device') {
      return { id: r.id, type: 'Device', name: r.name, description: r.description, owner_id: r.owner_id, owner_username: r.owner_username, city: r.city, url: `${baseUrl}/v0/devices/${r.id}`, country_code: r.country_code, country }
    }
    const picture = pictureUrl(baseUrl, r.picture)
    return { id: r.id, type: 'User', username: r.name, avatar: picture, profile_picture: picture ?? '', city: r.city, url: `${baseUrl}/v0/users/${r.id}`, country_code: r.country_code, country }
  })
  return { total, items }
}
