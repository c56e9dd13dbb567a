import type { Handle } from '../client.js'
import { visibleSql, type Visibility } from './visibility.js'

/** One hit of a search: a tag, a device or a user, with the total of the search on every row. */
export interface SearchHit {
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

/** What is searched: a prefix tsquery (letters and digits only) and an ilike pattern, already escaped. */
export interface SearchTerms { query: string, like: string }

/**
 * A page of a search: tags by name (at most 5), then devices and users by full-text rank (name,
 * description and city; username and city), one query with the total. Private devices only for
 * their owner and admins (visibility.ts), archived records never.
 */
export async function searchHits (h: Handle, terms: SearchTerms, page: { limit: number, offset: number }, v: Visibility): Promise<SearchHit[]> {
  const { sql } = h
  const { query, like } = terms
  const visible = visibleSql(sql, 'd', v)
  return await sql<SearchHit[]>`
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
    limit ${page.limit} offset ${page.offset}`
}

/** The total of a search, for a page past the end (no row carries the window count). */
export async function searchTotal (h: Handle, terms: SearchTerms, v: Visibility): Promise<number> {
  const { sql } = h
  const { query, like } = terms
  const visible = visibleSql(sql, 'd', v)
  const [row] = await sql<Array<{ n: number }>>`
    with q as (select to_tsquery('simple', esp_fold(${query})) as query)
    select (select least(count(*), 5) from tags t where t.name ilike ${like})
      + (select count(*) from devices d, q where esp_search_document(d.name, d.description, d.city) @@ q.query and d.archived_at is null
           and ${visible})
      + (select count(*) from users u, q where esp_search_document(u.username, u.city, null) @@ q.query and u.archived_at is null) as n`
  return Number(row?.n ?? 0)
}
