import { and, count, type SQL } from 'drizzle-orm'
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core'
import type { Executor } from '@esp/db'
import type { ListQuery } from './filter-compiler.js'

/**
 * One page of a table and the total count, in two parallel queries: the shared tail of every
 * list endpoint. `tieBreak` (the id) makes the order deterministic across pages.
 */
export async function listPage<T extends PgTable> (db: Executor, table: T, query: ListQuery, tieBreak: PgColumn, scope?: SQL, order?: SQL[]): Promise<{ rows: Array<T['$inferSelect']>, total: number }> {
  const where = and(scope, query.where)
  const [rows, totals] = await Promise.all([
    db.select().from(table as PgTable).where(where).orderBy(...(order ?? query.orderBy), tieBreak).limit(query.perPage).offset((query.page - 1) * query.perPage),
    db.select({ n: count() }).from(table as PgTable).where(where)
  ])
  return { rows: rows as Array<T['$inferSelect']>, total: totals[0]?.n ?? 0 }
}
