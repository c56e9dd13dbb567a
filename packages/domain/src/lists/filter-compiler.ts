import { type BoundValue, type FilterField, type FilterSpec, type ListFilter, type ListQuery, type ListSort, type Matcher, matchers } from '@esp/db'
import { errors } from '../errors.js'
import { parseQueryInstant } from '../readings/time-params.js'

// The field maps and what a ListQuery becomes in SQL are packages/db's (queries/lists.ts).
export { matchers, type FieldType, type FilterField, type FilterSpec, type ListQuery, type Matcher } from '@esp/db'

export const DEFAULT_PER_PAGE = 25
export const MAX_PER_PAGE = 1000

const SORT_KEYS = new Set(['sort', 's', 'sorts'])
const INT4_MIN = -2_147_483_648
const INT4_MAX = 2_147_483_647
// timestamptz reads years 1-9999 in ISO form; year 0 (what 0001-01-01T00:00+01:00 is in UTC) is out of range.
const TIMESTAMP_MIN_MS = -62_135_596_800_000 // 0001-01-01T00:00:00Z
const TIMESTAMP_MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function bad (key: string, message: string): never {
  throw errors.badRequest(`Invalid search term ${key}: ${message}`, { [key]: [message] })
}

function allowedKeys (spec: FilterSpec, admin: boolean): string[] {
  return Object.entries(spec).filter(([, f]) => admin || f.adminOnly !== true).map(([k]) => k).sort()
}

function convert (param: string, field: FilterField, raw: string): BoundValue {
  switch (field.type) {
    case 'integer': {
      if (!/^-?\d{1,15}$/.test(raw)) bad(param, `${JSON.stringify(raw)} is not an integer`)
      const n = Number(raw)
      if (n < INT4_MIN || n > INT4_MAX) bad(param, `${raw} is out of range (${INT4_MIN} to ${INT4_MAX})`)
      return n
    }
    case 'timestamp': {
      const ms = parseQueryInstant(raw)
      if (ms === null) bad(param, `${JSON.stringify(raw)} is not a date or time`)
      if (ms < TIMESTAMP_MIN_MS || ms > TIMESTAMP_MAX_MS) bad(param, `${JSON.stringify(raw)} is out of range (years 0001 to 9999)`)
      return new Date(ms).toISOString()
    }
    case 'uuid':
      if (!UUID.test(raw)) bad(param, `${JSON.stringify(raw)} is not a uuid`)
      return raw.toLowerCase()
    case 'boolean':
      if (!/^(true|false|1|0)$/.test(raw)) bad(param, `${JSON.stringify(raw)} is not true or false`)
      return raw === 'true' || raw === '1'
    case 'text':
      return raw
  }
}

/** The filter of `param` in plain values, checked against the field's type. */
function filterOf (param: string, key: string, field: FilterField, matcher: Matcher, values: string[]): ListFilter {
  const one = (): BoundValue[] => [convert(param, field, values[0] ?? '')]
  const text = (): BoundValue[] => {
    if (field.type !== 'text') bad(param, `${matcher} works on text only`)
    return [values[0] ?? '']
  }
  switch (matcher) {
    case 'eq':
    case 'not_eq':
    case 'lt':
    case 'lteq':
    case 'gt':
    case 'gteq': return { key, matcher, values: one() }
    case 'cont':
    case 'start':
    case 'end': return { key, matcher, values: text() }
    case 'in':
    case 'not_in': return { key, matcher, values: values.map((v) => convert(param, field, v)) }
    case 'null':
    case 'not_null': {
      const flag = values[0] ?? '1'
      if (!/^(true|false|1|0)$/.test(flag)) bad(param, 'takes 1, 0, true or false')
      const wantNull = (matcher === 'null') === (flag === '1' || flag === 'true')
      return { key, matcher: wantNull ? 'null' : 'not_null', values: [] }
    }
  }
}

function parsePositive (name: string, raw: string | null, fallback: number, max: number): number {
  if (raw === null || raw === '') return fallback
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw errors.badRequest(`${name} must be a positive integer`, { [name]: ['must be a positive integer'] })
  const value = Number(raw)
  if (value > max) throw errors.badRequest(`${name} must be at most ${max}`, { [name]: [`must be at most ${max}`] })
  return value
}

/**
 * The one compiler for list queries: `q[<key>_<matcher>]` filters from a per-resource allow-list,
 * `q[sort]`/`q[s]` = `<key> asc|desc`, `page`, `per_page`. Values become bound parameters, never
 * SQL text; an unknown key, matcher or value is a 400 that names what is allowed. The answer is
 * plain values, which the list functions of packages/db turn into SQL with the same field map.
 */
export function compileListQuery (params: URLSearchParams, spec: FilterSpec, options: { admin: boolean }): ListQuery {
  const filters: ListFilter[] = []
  let sort: ListSort[] | undefined
  const allowed = allowedKeys(spec, options.admin)
  const grouped = new Map<string, string[]>()
  for (const [rawKey, rawValue] of params) {
    const match = /^q\[([^\]]+)\](\[\])?$/.exec(rawKey)
    if (match === null) continue
    const inner = match[1] ?? ''
    const value = rawValue.trim()
    const list = grouped.get(inner) ?? []
    if (match[2] !== undefined || inner.endsWith('_in')) list.push(...value.split(',').map((v) => v.trim()).filter((v) => v !== ''))
    else list.push(value)
    grouped.set(inner, list)
  }
  for (const [inner, values] of grouped) {
    const param = `q[${inner}]`
    if (SORT_KEYS.has(inner)) {
      sort = (values.join(',').split(',').map((s) => s.trim()).filter((s) => s !== '')).map((clause) => {
        const [key = '', direction = 'asc', ...rest] = clause.split(/\s+/)
        const field = allowed.includes(key) && spec[key]?.wrap === undefined ? spec[key] : undefined
        if (field === undefined || rest.length > 0 || !/^(asc|desc)$/i.test(direction)) {
          bad(param, `sort takes "<key> asc" or "<key> desc" with a key of: ${allowed.join(', ')}`)
        }
        return { key, direction: direction.toLowerCase() === 'desc' ? 'desc' : 'asc' }
      })
      continue
    }
    // Blank values are ignored, as the established platform does (behaviour.md §8).
    if (values.length === 0 || values.every((v) => v === '')) continue
    const matcher = matchers.find((m) => inner.endsWith(`_${m}`) && spec[inner.slice(0, -m.length - 1)] !== undefined)
    const key = matcher === undefined ? undefined : inner.slice(0, -matcher.length - 1)
    const field = key === undefined ? undefined : spec[key]
    if (matcher === undefined || key === undefined || field === undefined || !allowed.includes(key)) {
      bad(param, `allowed keys are ${allowed.join(', ')}; matchers are ${matchers.join(', ')}`)
    }
    filters.push(filterOf(param, key, field, matcher, values))
  }
  return {
    filters,
    // Without a sort, listPage orders by id, so pages are stable.
    sort: sort ?? [],
    page: parsePositive('page', params.get('page'), 1, 1_000_000),
    perPage: parsePositive('per_page', params.get('per_page'), DEFAULT_PER_PAGE, MAX_PER_PAGE)
  }
}
