import type { Handle } from '../client.js'

export interface JournalRow { tbl: string, op: string, query: string }

/**
 * A row trigger on every table of the platform's schema records each committed change in
 * fuzz_journal; its highest id before and after a rejected request must be equal. Finer than a
 * checksum of the tables (it names the table and the statement) and cheap enough to read around
 * every request. pg-boss's own schema (the job queue) is left out: a rejected request may not
 * enqueue either, but a queued job lands in public tables only when it runs.
 * Returns the reader: the journal's highest id, and the first rows after `since`.
 */
export async function installWriteJournal ({ sql }: Pick<Handle, 'sql'>): Promise<(since?: number) => Promise<{ last: number, rows: JournalRow[] }>> {
  await sql.unsafe(`
    create table fuzz_journal (id bigserial primary key, tbl text not null, op text not null, query text);
    create function fuzz_journal () returns trigger language plpgsql as $$
    begin insert into fuzz_journal (tbl, op, query) values (tg_table_name, tg_op, left(current_query(), 200)); return null; end $$;`)
  const tables = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition and c.relname <> 'fuzz_journal'`
  for (const { name } of tables) {
    await sql.unsafe(`create trigger fuzz_journal after insert or update or delete on "${name}" for each row execute function fuzz_journal()`)
  }
  return async (since = 0) => {
    const [row] = await sql<{ last: string }[]>`select coalesce(max(id), 0) as last from fuzz_journal`
    const last = Number(row?.last ?? 0)
    if (last <= since) return { last, rows: [] }
    const rows = await sql<JournalRow[]>`select tbl, op, query from fuzz_journal where id > ${since} order by id limit 5`
    return { last, rows: rows.map(({ tbl, op, query }) => ({ tbl, op, query })) }
  }
}

/** pg-boss jobs waiting or running now. */
export async function pendingJobCount ({ sql }: Pick<Handle, 'sql'>): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from pgboss.job where state in ('created', 'retry', 'active') and start_after <= now()`
  return row?.n ?? 0
}

/** The lowest `count` ids of one of the platform's tables (seeded rows a test can name). */
export async function lowestIds ({ sql }: Pick<Handle, 'sql'>, table: string, count: number): Promise<number[]> {
  return (await sql.unsafe<{ id: number }[]>(`select id from "${table.replace(/"/g, '""')}" order by id limit ${Math.trunc(count)}`)).map((r) => r.id)
}
