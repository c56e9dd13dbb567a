import { and, asc, count, desc, eq, gt, gte, ilike, inArray, isNotNull, isNull, lt, lte, ne, notInArray, sql, type SQL, type SQLWrapper } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { Handle } from '../client.js'

/*
 * The list machinery's SQL: what a filter key stands for (a field map's `column`), and the page
 * and total of a list. The domain's filter compiler (packages/domain lists/filter-compiler.ts)
 * checks and converts what the caller sent into a ListQuery of plain values; this module alone
 * turns one into conditions and orders.
 */

/** `integer` is PostgreSQL's int4: every id and count column of the schema is one (no bigint). */
export type FieldType = 'integer' | 'text' | 'timestamp' | 'uuid' | 'boolean'

export interface FilterField {
  column: SQLWrapper
  type: FieldType
  /** only admins may filter or sort by it (e.g. device tokens) */
  adminOnly?: boolean
  /** a key through a to-many relation: the condition on `column` is wrapped, e.g. in an exists(); not sortable */
  wrap?: (condition: SQL) => SQL
}

/** A list's filter keys and what each stands for (a field map). */
export type FilterSpec = Record<string, FilterField>

/** Longer suffixes first, so `owner_id_not_null` is `owner_id` + `not_null`, not `owner_id_not` + `null`. */
export const matchers = ['not_null', 'not_eq', 'not_in', 'null', 'eq', 'cont', 'start', 'end', 'in', 'lteq', 'lt', 'gteq', 'gt'] as const
export type Matcher = (typeof matchers)[number]

/**
 * What a filter value is bound as. Never a Date: postgres.js is handed the value as it is (the
 * column is wrapped in sql``, so Drizzle does not encode it), and it cannot send a Date there.
 * Timestamps go as ISO text, which PostgreSQL reads as the column's timestamptz.
 */
export type BoundValue = string | number | boolean

/**
 * One filter of a list, checked and converted by the filter compiler: `null` and `not_null` carry
 * no value (the compiler settles which one the caller meant), `cont`, `start` and `end` the text
 * as sent, the others one value each (`in` and `not_in` a list).
 */
export interface ListFilter { key: string, matcher: Matcher, values: BoundValue[] }

export interface ListSort { key: string, direction: 'asc' | 'desc' }

/** A list request in plain values: filters (all must hold), sort keys, page (from 1) and its size. */
export interface ListQuery {
  filters: ListFilter[]
  sort: ListSort[]
  page: number
  perPage: number
}

const likeEscape = (value: string): string => value.replace(/[\\%_]/g, (c) => `\\${c}`)

function condition (field: FilterField, filter: ListFilter): SQL | undefined {
  const column = sql`${field.column}`
  const [first = ''] = filter.values
  switch (filter.matcher) {
    case 'eq': return eq(column, first)
    case 'not_eq': return ne(column, first)
    case 'lt': return lt(column, first)
    case 'lteq': return lte(column, first)
    case 'gt': return gt(column, first)
    case 'gteq': return gte(column, first)
    case 'cont': return ilike(column, `%${likeEscape(String(first))}%`)
    case 'start': return ilike(column, `${likeEscape(String(first))}%`)
    case 'end': return ilike(column, `%${likeEscape(String(first))}`)
    case 'in': return inArray(column, filter.values)
    case 'not_in': return notInArray(column, filter.values)
    case 'null': return isNull(column)
    case 'not_null': return isNotNull(column)
  }
}

/** A field of `spec`, which the compiler already found there. */
function fieldOf (spec: FilterSpec, key: string): FilterField {
  const field = spec[key]
  if (field === undefined) throw new Error(`no list key ${key}`)
  return field
}

/** The conditions of a list's filters, all of which must hold; undefined without filters. */
export function listWhere (spec: FilterSpec, filters: ListFilter[]): SQL | undefined {
  const conditions = filters.flatMap((filter) => {
    const field = fieldOf(spec, filter.key)
    const compiled = condition(field, filter)
    if (compiled === undefined) return []
    return [field.wrap === undefined ? compiled : field.wrap(compiled)]
  })
  return conditions.length === 0 ? undefined : and(...conditions)
}

/** The order of a list's sort keys; empty without any (listPage then orders by its tie break). */
export function listOrder (spec: FilterSpec, sort: ListSort[]): SQL[] {
  return sort.map(({ key, direction }) => {
    const column = sql`${fieldOf(spec, key).column}`
    return direction === 'desc' ? desc(column) : asc(column)
  })
}

/**
 * One page of a table and the total count, in two parallel queries: the shared tail of every
 * list endpoint. `tieBreak` (the id) makes the order deterministic across pages; `scope` is what
 * the list holds at all (active rows, those the viewer may see); `order` replaces the sort keys.
 */
export async function listPage<T extends PgTable> (h: Handle, table: T, spec: FilterSpec, query: ListQuery, tieBreak: PgColumn, scope?: SQL, order?: SQL[]): Promise<{ rows: Array<T['$inferSelect']>, total: number }>
/** `columns`: only these of each row (the ids of a page that one statement then reads whole). */
export async function listPage<T extends PgTable, C extends Record<string, PgColumn>> (h: Handle, table: T, spec: FilterSpec, query: ListQuery, tieBreak: PgColumn, scope: SQL | undefined, order: SQL[] | undefined, columns: C): Promise<{ rows: Array<{ [K in keyof C]: C[K]['_']['data'] }>, total: number }>
export async function listPage (h: Handle, table: PgTable, spec: FilterSpec, query: ListQuery, tieBreak: PgColumn, scope?: SQL, order?: SQL[], columns?: Record<string, PgColumn>): Promise<{ rows: unknown[], total: number }> {
  const { db } = h
  const where = and(scope, listWhere(spec, query.filters))
  const [rows, totals] = await Promise.all([
    (columns === undefined ? db.select() : db.select(columns)).from(table).where(where).orderBy(...(order ?? listOrder(spec, query.sort)), tieBreak).limit(query.perPage).offset((query.page - 1) * query.perPage),
    db.select({ n: count() }).from(table).where(where)
  ])
  return { rows, total: totals[0]?.n ?? 0 }
}
