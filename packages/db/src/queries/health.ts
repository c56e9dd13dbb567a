import { POOL_GATE, type Handle, type PoolGate } from '../client.js'

/** One `select 1`: the probe of a pool's health and of its saturation. */
export async function ping (h: Pick<Handle, 'sql'>): Promise<void> {
  await h.sql`select 1`
}

/**
 * The gate of the handle's pool (a pool createDatabase made has one; a plain postgres.js pool has
 * none) and a handle past it, for the probe that must reach the database while the gate refuses
 * everyone else.
 */
export function poolGateOf (h: Pick<Handle, 'sql'>): { gate: PoolGate | undefined, probe: Pick<Handle, 'sql'> } {
  const found: unknown = Reflect.get(h.sql, POOL_GATE)
  const gate = typeof found === 'object' && found !== null && 'refuse' in found && 'admit' in found && 'probe' in found ? found as PoolGate : undefined
  return { gate, probe: gate === undefined ? h : { sql: gate.probe } }
}

/** The open connections of the pools labelled `applicationName` in this database, by state. */
export async function poolConnections (h: Pick<Handle, 'sql'>, applicationName: string): Promise<{ busy: number, idle: number }> {
  // The connection that runs this query is one of the pool's, idle but for the scrape itself.
  const [row] = await h.sql<Array<{ busy: number, idle: number }>>`
    select count(*) filter (where state is distinct from 'idle' and pid <> pg_backend_pid())::int as busy,
           count(*) filter (where state = 'idle' or pid = pg_backend_pid())::int as idle
      from pg_stat_activity
     where application_name = ${applicationName} and datname = current_database()`
  return row ?? { busy: 0, idle: 0 }
}
