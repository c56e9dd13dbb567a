import { sql as drizzleSql, type SQL } from 'drizzle-orm'
import type { Sql } from '../client.js'

/**
 * Who is looking, as the privacy rule needs it (contract: a private device is hidden from other
 * users): the viewer's user id (null when anonymous) and whether they are an admin. The domain
 * makes it from its Viewer (`visibility` in device-access.ts).
 */
export interface Visibility { viewerId: number | null, admin: boolean }

/**
 * The privacy rule's only statement as SQL: a devices row is visible when it is public, owned by
 * the viewer, or the viewer is an admin. Every form below is this template, given to a different
 * tag: the statement builders differ in how they spell a column and a parameter, not in the rule.
 */
function rule<T> (tag: (strings: TemplateStringsArray, ...values: never[]) => T, isPrivate: unknown, ownerId: unknown, viewerId: unknown, admin: unknown): T {
  return tag`(not ${isPrivate as never} or ${ownerId as never} = ${viewerId as never} or ${admin as never})`
}

/** Joins a template's parts with its values as text (values are SQL text here, never data). */
const text = (strings: TemplateStringsArray, ...values: unknown[]): string =>
  strings.reduce((out, part, i) => out + part + (i < values.length ? String(values[i]) : ''), '')

/**
 * The rule as text over a devices row of `alias`, with the viewer's id in $2 and whether they are
 * an admin in $3: the form of the prepared read statements (queries/devices.ts), whose text must
 * not change with the viewer. The parameters sit in subqueries so that a plan made for one viewer
 * costs what the generic plan costs (see queries/devices.ts).
 */
export const visibleText = (alias: string): string => visibleTextFor(alias, '(select $2::int4)', '(select $3::bool)')

/**
 * The rule as text over a devices row of `alias`, for the viewer whose id and admin flag are these
 * SQL expressions: a statement that answers several viewers at once (the batched stamps of
 * queries/revisions.ts) reads them from its rows.
 */
export const visibleTextFor = (alias: string, viewerId: string, admin: string): string =>
  rule(text, `${alias}.is_private`, `${alias}.owner_id`, viewerId, admin)

/**
 * The rule as a postgres.js condition over a devices row of `alias`. The viewer is known when the
 * statement is built, so an admin's condition is `true` and an anonymous one `not is_private`:
 * what the rule reduces to for them, spelled so the planner can use the partial indexes.
 */
export function visibleSql (sql: Sql, alias: string, v: Visibility): ReturnType<Sql> {
  const isPrivate = sql(`${alias}.is_private`)
  if (v.admin) return sql`true`
  if (v.viewerId === null) return sql`not ${isPrivate}`
  return rule(sql, isPrivate, sql(`${alias}.owner_id`), v.viewerId, sql`false`)
}

/** The rule as a Drizzle condition over the given columns; undefined (no condition) for an admin. */
export function visibleDrizzle (columns: { isPrivate: unknown, ownerId: unknown }, v: Visibility): SQL | undefined {
  if (v.admin) return undefined
  if (v.viewerId === null) return drizzleSql`not ${columns.isPrivate}`
  return rule(drizzleSql as (strings: TemplateStringsArray, ...values: unknown[]) => SQL, columns.isPrivate, columns.ownerId, v.viewerId, drizzleSql.raw('false'))
}
