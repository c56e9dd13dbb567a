import { MAX_NTH_READING, nthReadingTime } from '@esp/db'
import { errors } from '../errors.js'
import type { HistoryContext } from './history-context.js'

// The reference's `limit` (clients.md rule 6), for one sensor and for several.

/**
 * `limit`: the oldest this many stored readings of a sensor in [from, to] are aggregated. Finding
 * where the last of them lies steps over that many index entries (nthReadingTime), charged as a
 * value answered for every LIMIT_READINGS_PER_VALUE of them.
 */
const MAX_LIMIT = MAX_NTH_READING
const LIMIT_READINGS_PER_VALUE = 20

/** The `limit` parameter: null when absent. */
export function parseLimitParam (value: string | undefined): number | null {
  const text = value?.trim() ?? ''
  if (text === '') return null
  const limit = /^\d{1,9}$/.test(text) ? Number(text) : NaN
  if (!(limit >= 1 && limit <= MAX_LIMIT)) throw errors.badRequest(`limit must be an integer from 1 to ${MAX_LIMIT}`, { limit: [`must be an integer from 1 to ${MAX_LIMIT}`] })
  return limit
}

/**
 * Where reading stops under `limit` (KairosDB's metric limit: the oldest `limit` data points of
 * the range, before any aggregation): the time of the limit-th reading from `from`, or `to` when
 * the range holds fewer. The caller is charged for the lookup before it runs.
 */
export async function limitedTo (ctx: HistoryContext, q: { deviceId: number, sensorId: number, from: Date, to: Date, limit: number }): Promise<Date> {
  await ctx.charge?.(Math.floor(q.limit / LIMIT_READINGS_PER_VALUE))
  const last = await nthReadingTime(ctx.runner, { deviceId: q.deviceId, sensorId: q.sensorId, from: q.from, until: new Date(q.to.getTime() + 1), n: q.limit })
  return last ?? q.to
}
