import { rm } from 'node:fs/promises'
import path from 'node:path'
import { clearLowBatteryNotices, deleteArchivedDevices, type Handle, inTransaction, markLowBatteries, markStoppedPublishing, type TimeSeriesEngine } from '@esp/db'
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

const before = (now: Date, seconds: number): Date => new Date(now.getTime() - seconds * 1000)

/** Deletes devices archived longer than the grace period, with their readings in both engines and their archives. */
export async function purgeArchivedDevices (deps: ScheduledDeps, now: Date): Promise<number[]> {
  const ids = await inTransaction(deps.database, async (tx) => await deleteArchivedDevices(tx, deps.engine, before(now, deps.settings.purgeGraceSeconds)))
  for (const id of ids) await rm(path.join(deps.archiveDir, String(id)), { recursive: true, force: true })
  return ids
}

/**
 * "Stopped publishing": once per outage. An outage is over when a reading newer than the last
 * notice arrives, so the next silence is a new outage; devices that never published are left out.
 */
export async function notifyStoppedPublishing (deps: ScheduledDeps, now: Date): Promise<number[]> {
  return await inTransaction(deps.database, async (tx) => {
    const rows = await markStoppedPublishing(tx, now, before(now, deps.settings.stoppedAfterSeconds))
    for (const row of rows) {
      await deps.send(tx, 'mail', {
        to: row.email,
        subject: 'Device stopped publishing',
        text: `Hello ${row.username},\n\nyour device "${row.name}" (id ${row.id}) has sent no reading since ${formatTimestamp(row.lastReadingAt)}.\n` +
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
    await clearLowBatteryNotices(tx, threshold)
    const rows = await markLowBatteries(tx, now, threshold)
    for (const row of rows) {
      await deps.send(tx, 'mail', {
        to: row.email,
        subject: 'Device battery low',
        text: `Hello ${row.username},\n\nthe battery of your device "${row.name}" (id ${row.id}) is at ${Math.trunc(row.value)}%.\n` +
          'You get this notice once until the battery is charged again; turn it off in the device settings.\n'
      })
    }
    return rows.map((r) => r.id)
  })
}
