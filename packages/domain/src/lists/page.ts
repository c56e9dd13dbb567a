import { and, count, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { Executor } from '@esp/db'
import type { ListQuery } from './filter-compiler.js'

/**
 * One page of a table and the total count, in two parallel queries: the shared tail of every
 * list endpoint. `tieBreak` (the id) makes the order deterministic across pages.
 */
export async function listPage<T extends PgTable> (db: Executor, table: T, query: ListQuery, tieBreak: PgColumn, scope?: SQL, order?: SQL[]): Promise<{ rows: Array<T['$inferSelect']>, total: number }>
/** `columns`: only these of each row (the ids of a page that one statement then reads whole). */
export async function listPage<T extends PgTable, C extends Record<string, PgColumn>> (db: Executor, table: T, query: ListQuery, tieBreak: PgColumn, scope: SQL | undefined, order: SQL[] | undefined, columns: C): Promise<{ rows: Array<{ [K in keyof C]: C[K]['_']['data'] }>, total: number }>
export async function listPage (db: Executor, table: PgTable, query: ListQuery, tieBreak: PgColumn, scope?: SQL, order?: SQL[], columns?: Record<string, PgColumn>): Promise<{ rows: unknown[], total: number }> {
  const where = and(scope, query.where)
  const [rows, totals] = await Promise.all([
    (columns === undefined ? db.select() : db.select(columns)).from(table).where(where).orderBy(...(order ?? query.orderBy), tieBreak).limit(query.perPage).offset((query.page - 1) * query.perPage),
    db.select({ n: count() }).from(table).where(where)
  ])
  return { rows, total: totals[0]?.n ?? 0 }
}
