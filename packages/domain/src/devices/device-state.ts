/** Pure rules for the automatic device fields (contract: States and transitions, System tags). */
const DAY = 24 * 3600 * 1000
export const NEW_FOR_MS = 7 * DAY
export const OFFLINE_AFTER_MS = 60 * 60 * 1000
export const OLD_STATUS_OFFLINE_AFTER_MS = 10 * 60 * 1000

export interface StateFacts { exposure: string | null, createdAt: Date, lastReadingAt: Date | null }

/** `new` for 7 days, exposure (outdoor by default), and `online`/`offline` at 60 minutes, sorted. */
export function systemTags (device: StateFacts, now: Date): string[] {
  const tags = [device.exposure ?? 'outdoor']
  if (now.getTime() - device.createdAt.getTime() < NEW_FOR_MS) tags.push('new')
  const fresh = device.lastReadingAt !== null && now.getTime() - device.lastReadingAt.getTime() < OFFLINE_AFTER_MS
  tags.push(fresh ? 'online' : 'offline')
  return tags.sort()
}

/** The older form's `status`: new if never updated, online within 10 minutes, else offline. */
export function legacyStatus (device: StateFacts, now: Date): 'new' | 'online' | 'offline' {
  if (device.lastReadingAt === null) return 'new'
  return now.getTime() - device.lastReadingAt.getTime() < OLD_STATUS_OFFLINE_AFTER_MS ? 'online' : 'offline'
}

/**
 * When `systemTags` or `legacyStatus` next change by the clock alone (`new` ends, `online` turns
 * `offline`), in epoch ms; Infinity when nothing will. A representation kept past it would be wrong.
 */
export function stateChangesAt (device: StateFacts, now: Date): number {
  const at = now.getTime()
  const moments = [device.createdAt.getTime() + NEW_FOR_MS]
  if (device.lastReadingAt !== null) {
    const last = device.lastReadingAt.getTime()
    moments.push(last + OFFLINE_AFTER_MS, last + OLD_STATUS_OFFLINE_AFTER_MS)
  }
  return moments.reduce((next, moment) => moment > at && moment < next ? moment : next, Infinity)
}
