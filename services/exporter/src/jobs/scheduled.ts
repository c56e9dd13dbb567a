import { rm } from 'node:fs/promises'
import path from 'node:path'
import { type Handle, inTransaction, pgDate, postgresRunner, type TimeSeriesEngine } from '@esp/db'
import { formatTimestamp, type JobSender } from '@esp/domain'

/**
 * The scheduled jobs (behaviour.md §14). Each is a plain function of its dependencies and the
 * time, idempotent and safe to run from several exporters at once: the change that decides
 * (a DELETE, a conditional UPDATE) takes row locks, so a concurrent run waits, re-reads the
 * committed rows and finds nothing left to do; mail is enqueued in the same transaction.
 */
export interface ScheduledDeps {
  database: Handle
  engine: TimeSeriesEngine
  send: JobSender
  archiveDir: string
  settings: {
    /** archived devices are deleted this long after archiving (DEVICE_PURGE_GRACE_SECONDS) */
    purgeGraceSeconds: number
    /** no reading for this long is an outage (STOPPED_PUBLISHING_AFTER_SECONDS) */
    stoppedAfterSeconds: number
    /** a battery below this percentage is low (LOW_BATTERY_PERCENT) */
    lowBatteryPercent: number
  }
}

const before = (now: Date, seconds: number): string => new Date(now.getTime() - seconds * 1000).toISOString()

/** Deletes devices archived longer than the grace period, with their readings in both engines and their archives. */
export async function purgeArchivedDevices (deps: ScheduledDeps, now: Date): Promise<number[]> {
  const ids = await inTransaction(deps.database, async (tx) => {
    const rows = await tx.sql<{ id: number }[]>`
      delete from devices where archived_at is not null and archived_at <= ${before(now, deps.settings.purgeGraceSeconds)}::timestamptz
      returning id`
    const deleted = rows.map((r) => r.id).sort((a, b) => a - b)
    await deps.engine.purgeDevices(postgresRunner(tx.sql), deleted)
    return deleted
  })
  for (const id of ids) await rm(path.join(deps.archiveDir, String(id)), { recursive: true, force: true })
  return ids
}

interface Notice { id: number, name: string, email: string, username: string }

/**
 * "Stopped publishing": once per outage. An outage is over when a reading newer than the last
 * notice arrives, so the next silence is a new outage; devices that never published are left out.
 */
export async function notifyStoppedPublishing (deps: ScheduledDeps, now: Date): Promise<number[]> {
  return await inTransaction(deps.database, async (tx) => {
    const rows = await tx.sql<(Notice & { last_reading_at: string })[]>`
      update devices d set stopped_publishing_notified_at = ${now.toISOString()}::timestamptz
      from users u
      where u.id = d.owner_id and d.notify_stopped_publishing and d.archived_at is null
        and d.last_reading_at <= ${before(now, deps.settings.stoppedAfterSeconds)}::timestamptz
        and (d.stopped_publishing_notified_at is null or d.stopped_publishing_notified_at < d.last_reading_at)
      returning d.id, d.name, u.email, u.username, d.last_reading_at::text`
    for (const row of rows) {
      const last = pgDate(row.last_reading_at)
      await deps.send(tx.sql, 'mail', {
        to: row.email,
        subject: 'Device stopped publishing',
        text: `Hello ${row.username},\n\nyour device "${row.name}" (id ${row.id}) has sent no reading since ${formatTimestamp(last)}.\n` +
          'You get this notice once per outage; turn it off in the device settings.\n'
      })
    }
    return rows.map((r) => r.id)
  })
}

/**
 * "Low battery": once per episode. The battery is the device's latest value of a sensor measuring
 * `battery` (%); -1 means no battery, so values up to 1 are ignored (behaviour.md §14). An episode
 * ends when the battery is back at or above the threshold, which clears the notice.
 */
export async function notifyLowBattery (deps: ScheduledDeps, now: Date): Promise<number[]> {
  const threshold = deps.settings.lowBatteryPercent
  return await inTransaction(deps.database, async (tx) => {
    const battery = tx.sql`
      select distinct on (lr.device_id) lr.device_id, lr.value
      from latest_readings lr join sensors s on s.id = lr.sensor_id join measurements m on m.id = s.measurement_id
      where m.name = 'battery' and lr.value is not null
      order by lr.device_id, lr.recorded_at desc`
    await tx.sql`
      update devices d set low_battery_notified_at = null
      from (${battery}) b where b.device_id = d.id and d.low_battery_notified_at is not null and b.value >= ${threshold}`
    const rows = await tx.sql<(Notice & { value: number })[]>`
      update devices d set low_battery_notified_at = ${now.toISOString()}::timestamptz
      from (${battery}) b, users u
      where b.device_id = d.id and u.id = d.owner_id and d.notify_low_battery and d.archived_at is null
        and d.low_battery_notified_at is null and trunc(b.value) > 1 and b.value < ${threshold}
      returning d.id, d.name, u.email, u.username, b.value`
    for (const row of rows) {
      await deps.send(tx.sql, 'mail', {
        to: row.email,
        subject: 'Device battery low',
        text: `Hello ${row.username},\n\nthe battery of your device "${row.name}" (id ${row.id}) is at ${Math.trunc(row.value)}%.\n` +
          'You get this notice once until the battery is charged again; turn it off in the device settings.\n'
      })
    }
    return rows.map((r) => r.id)
  })
}
