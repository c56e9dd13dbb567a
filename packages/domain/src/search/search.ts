import type { Sql } from '@esp/db'
import { errors } from '../errors.js'
import type { Viewer } from '../auth/viewer.js'
import { visibleToSql } from '../devices/device-access.js'
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

interface Hit {
  kind: 'Tag' | 'Device' | 'User'
  id: number
  name: string | null
  description: string | null
  owner_id: number | null
  owner_username: string | null
  city: string | null
  country_code: string | null
  picture: string | null
  total: number
}

/**
 * `GET /search?q=`: tags by name, then devices and users by full-text rank (name, description and
 * city; username and city), one query with the total. Private devices only for their owner and
 * admins, archived records never.
 */
export async function search (sql: Sql, q: string | undefined, page: { page: number, perPage: number }, viewer: Viewer | null, baseUrl: string) {
  const text = (q ?? '').trim()
  if (text === '') throw errors.parameterMissing(['q'])
  if (text.length > MAX_QUERY) throw errors.badRequest(`q must be at most ${MAX_QUERY} characters`, { q: [`is too long (maximum is ${MAX_QUERY} characters)`] })
  const query = prefixQuery(text)
  if (query === null) return { total: 0, items: [] }
  const visible = visibleToSql(sql, viewer)
  const like = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  const rows = await sql<Hit[]>`
    with q as (select to_tsquery('simple', esp_fold(${query})) as query),
    hits as (
      (select 'Tag' as kind, 0 as priority, 1::real as rank, t.id, t.name, t.description, null::int as owner_id, null as owner_username,
              null as city, null as country_code, null as picture
       from tags t where t.name ilike ${like} order by t.name limit 5)
      union all
      select 'Device', 1, ts_rank(esp_search_document(d.name, d.description, d.city), q.query), d.id, d.name, d.description, d.owner_id, u.username,
             d.city, d.country_code, null
      from devices d join users u on u.id = d.owner_id, q
      where esp_search_document(d.name, d.description, d.city) @@ q.query and d.archived_at is null
        and ${visible}
      union all
      select 'User', 1, ts_rank(esp_search_document(u.username, u.city, null), q.query), u.id, u.username, null, null, null,
             u.city, u.country_code, u.profile_picture
      from users u, q
      where esp_search_document(u.username, u.city, null) @@ q.query and u.archived_at is null
    )
    select kind, id, name, description, owner_id, owner_username, city, country_code, picture, count(*) over ()::int as total
    from hits order by priority, rank desc, kind, id
    limit ${page.perPage} offset ${(page.page - 1) * page.perPage}`
  const total = rows[0]?.total ?? (page.page === 1 ? 0 : await countAll(sql, query, like, visible))
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

/** The total when the page is past the end (no row carries the window count). */
async function countAll (sql: Sql, query: string, like: string, visible: ReturnType<typeof visibleToSql>): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`
    with q as (select to_tsquery('simple', esp_fold(${query})) as query)
    select (select least(count(*), 5) from tags t where t.name ilike ${like})
      + (select count(*) from devices d, q where esp_search_document(d.name, d.description, d.city) @@ q.query and d.archived_at is null
           and ${visible})
      + (select count(*) from users u, q where esp_search_document(u.username, u.city, null) @@ q.query and u.archived_at is null) as n`
  return Number(row?.n ?? 0)
}
