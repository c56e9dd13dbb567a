import type { Handle } from '../client.js'
import { engineName, pgDate, postgresRunner, type TimeSeriesEngine } from '../timeseries/engine.js'
import { nativeEngine } from '../timeseries/native.js'
import { timescaleEngine } from '../timeseries/timescale.js'

/*
 * The statements of the job queue's own bookkeeping and of the scheduled jobs (behaviour.md §14).
 * The scheduled ones decide by a DELETE or a conditional UPDATE, which take row locks: a
 * concurrent run waits, re-reads the committed rows and finds nothing left to do.
 */

/** Any constant works; the same for every process that creates this database's queues. */
const QUEUE_LOCK = 7_250_331_002

/** Waits for, and holds until the transaction ends, the lock under which processes create the queues in turn. */
export async function lockJobQueues (tx: Handle): Promise<void> {
  await tx.sql`select pg_advisory_xact_lock(${QUEUE_LOCK})`
}

/** Jobs in pg-boss's tables by queue and state, a row for every queue and each of `states` (0 when none). */
export async function jobCounts (h: Handle, states: readonly string[]): Promise<Array<{ name: string, state: string, n: number }>> {
  return await h.sql<Array<{ name: string, state: string, n: number }>>`select q.name, s.state, count(j.id)::int as n
         from pgboss.queue q
        cross join unnest(${states as string[]}::text[]) as s(state)
         left join pgboss.job j on j.name = q.name and j.state = s.state::pgboss.job_state
        group by q.name, s.state`
}

/** The time-series engine the database was migrated with, whose tables a purge empties too (deleteArchivedDevices). */
export async function migratedEngine (h: Handle): Promise<TimeSeriesEngine> {
  return (await engineName(postgresRunner(h.sql))) === 'timescale' ? timescaleEngine() : nativeEngine()
}

/**
 * Deletes the devices archived at or before `archivedBefore`, and their readings in the engine's
 * tables; returns their ids, ascending. Run it in a transaction.
 */
export async function deleteArchivedDevices (tx: Handle, engine: TimeSeriesEngine, archivedBefore: Date): Promise<number[]> {
  const rows = await tx.sql<{ id: number }[]>`
    delete from devices where archived_at is not null and archived_at <= ${archivedBefore.toISOString()}::timestamptz
    returning id`
  const deleted = rows.map((r) => r.id).sort((a, b) => a - b)
  await engine.purgeDevices(postgresRunner(tx.sql), deleted)
  return deleted
}

/** A device a notice is about, and its owner, who gets it. */
export interface DeviceNoticeRow { id: number, name: string, email: string, username: string }

/**
 * Marks as notified the devices that asked for the notice, whose last reading is at or before
 * `silentSince`, not yet notified of this outage (no notice since that reading); returns them.
 */
export async function markStoppedPublishing (tx: Handle, now: Date, silentSince: Date): Promise<Array<DeviceNoticeRow & { lastReadingAt: Date }>> {
  const rows = await tx.sql<(DeviceNoticeRow & { last_reading_at: string })[]>`
    update devices d set stopped_publishing_notified_at = ${now.toISOString()}::timestamptz
    from users u
    where u.id = d.owner_id and d.notify_stopped_publishing and d.archived_at is null
      and d.last_reading_at <= ${silentSince.toISOString()}::timestamptz
      and (d.stopped_publishing_notified_at is null or d.stopped_publishing_notified_at < d.last_reading_at)
    returning d.id, d.name, u.email, u.username, d.last_reading_at::text`
  return rows.map((row) => ({ id: row.id, name: row.name, email: row.email, username: row.username, lastReadingAt: pgDate(row.last_reading_at) }))
}

/** Each device's latest value of a sensor measuring `battery`. */
const latestBattery = (tx: Handle): ReturnType<Handle['sql']> => tx.sql`
      select distinct on (lr.device_id) lr.device_id, lr.value
      from latest_readings lr join sensors s on s.id = lr.sensor_id join measurements m on m.id = s.measurement_id
      where m.name = 'battery' and lr.value is not null
      order by lr.device_id, lr.recorded_at desc`

/** Clears the low-battery notice of devices whose battery is back at or above `threshold` (%). */
export async function clearLowBatteryNotices (tx: Handle, threshold: number): Promise<void> {
  await tx.sql`
      update devices d set low_battery_notified_at = null
      from (${latestBattery(tx)}) b where b.device_id = d.id and d.low_battery_notified_at is not null and b.value >= ${threshold}`
}

/**
 * Marks as notified the devices that asked for the notice, not yet notified, whose battery is
 * below `threshold` (%); values up to 1 mean no battery (-1) and are left out. Returns them.
 */
export async function markLowBatteries (tx: Handle, now: Date, threshold: number): Promise<Array<DeviceNoticeRow & { value: number }>> {
  return await tx.sql<(DeviceNoticeRow & { value: number })[]>`
      update devices d set low_battery_notified_at = ${now.toISOString()}::timestamptz
      from (${latestBattery(tx)}) b, users u
      where b.device_id = d.id and u.id = d.owner_id and d.notify_low_battery and d.archived_at is null
        and d.low_battery_notified_at is null and trunc(b.value) > 1 and b.value < ${threshold}
      returning d.id, d.name, u.email, u.username, b.value`
}

/**
 * pg-boss is written against node-postgres, which binds undefined as null and objects as JSON;
 * postgres.js does neither by itself.
 */
function asPgParam (value: unknown): unknown {
  if (value === undefined) return null
  if (value !== null && typeof value === 'object' && !(value instanceof Date) && !Buffer.isBuffer(value) && !Array.isArray(value)) return JSON.stringify(value)
  return value
}

/**
 * pg-boss's `db` option over a Handle: its own statements run on the Handle's client, so a job
 * sent with a transaction's Handle exists if and only if the transaction commits.
 */
export function jobQueueExecutor (h: Handle): { executeSql: (text: string, values?: unknown[]) => Promise<{ rows: unknown[] }> } {
  return { executeSql: async (text, values = []) => ({ rows: await h.sql.unsafe(text, values.map(asPgParam) as never[]) }) }
}
