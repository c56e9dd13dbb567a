import type { FieldErrors } from '../errors.js'
import { parseRecordedAt } from './time-params.js'
import { toId } from '../validation/body-reader.js'
import { recordId } from '../validation/record-id.js'

/**
 * One posted value before its sensor is resolved: `ref` is a sensor id or a kit/sensor key.
 * `entry` and `index` say where it was (`data[entry].sensors[index]`, or a CSV line and column);
 * they become a path only when a problem is reported, not for every value of a large batch.
 */
export interface PostedValue {
  entry: number
  index: number
  ref: number | string
  recordedAt: Date
  raw: number
}

/** The name of a value's place in what was posted, for the problems reported about it. */
export type ValuePath = (value: Pick<PostedValue, 'entry' | 'index'>) => string

export const postedPath: ValuePath = (value) => `data[${value.entry}].sensors[${value.index}]`

export interface BatchLimits {
  /** values per batch; more is a 413 */
  maxValues: number
  /** how far ahead of the server clock a timestamp may be (READINGS_MAX_FUTURE_SECONDS) */
  maxFutureMs: number
  /** nothing older is accepted: OLDEST_READING on every path that writes readings */
  minTime: Date
}

/**
 * The oldest reading any path accepts (HTTP, MQTT raw and JSON, the SD-card CSV import, the older
 * /add): a mistyped year is refused and said so, not stored as decades of empty partitions. The
 * newest is the server clock plus READINGS_MAX_FUTURE_SECONDS. Both are applied by
 * `timeProblem` alone and described by `timeBoundsText`.
 */
export const OLDEST_READING = new Date('1990-01-01T00:00:00Z')

/**
 * Why a device message stored nothing, as metrics count it and the device's ingest status says:
 * `unreadable` (not the format of its topic), `invalid` (an item is malformed: a blank or bad
 * time, a value that is not a number), `too_old` and `in_future` (a time outside the bounds
 * above), `too_many_values` (over READINGS_MAX_VALUES).
 */
export const REJECTION_REASONS = ['unreadable', 'invalid', 'too_old', 'in_future', 'too_many_values'] as const
export type RejectionReason = (typeof REJECTION_REASONS)[number]

export const MAX_PROBLEMS = 100
const NUMERIC = /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/

/** Names a problem under `path`; past MAX_PROBLEMS paths the rest are left out. */
export function addProblem (problems: FieldErrors, path: string, message: string): void {
  if (Object.keys(problems).length < MAX_PROBLEMS) (problems[path] ??= []).push(message)
}

const isoSeconds = (date: Date): string => `${date.toISOString().slice(0, 19)}Z`

/** `86400 seconds (1 day)`: a bound in words that name the setting's own unit. */
function secondsText (ms: number): string {
  const seconds = Math.floor(ms / 1000)
  const days = seconds / 86_400
  return Number.isInteger(days) && days >= 1 ? `${seconds} seconds (${days} day${days === 1 ? '' : 's'})` : `${seconds} seconds`
}

/** The accepted range of `recorded_at` in words, for the OpenAPI descriptions and the messages. */
export function timeBoundsText (limits: Pick<BatchLimits, 'minTime' | 'maxFutureMs'>): string {
  return `from ${isoSeconds(limits.minTime)} to ${secondsText(limits.maxFutureMs)} after the server's clock`
}

/**
 * What is wrong with a time older than `limits.minTime` or later than `latest` (epoch ms: the
 * clock plus `limits.maxFutureMs`), with the bound it breaks; null when it is fine. The one check
 * of the time bounds, on every path that writes readings.
 */
export function timeProblem (recordedAt: Date, limits: Pick<BatchLimits, 'minTime' | 'maxFutureMs'>, latest: number): { reason: 'too_old' | 'in_future', message: string } | null {
  const at = recordedAt.getTime()
  if (at > latest) return { reason: 'in_future', message: `is too far in the future: at most ${secondsText(limits.maxFutureMs)} after the server's clock is accepted` }
  if (at < limits.minTime.getTime()) return { reason: 'too_old', message: `is before ${isoSeconds(limits.minTime)}, the oldest time accepted` }
  return null
}

export function asNumber (value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null
  if (typeof value === 'string' && NUMERIC.test(value)) {
    const n = Number(value)
    return Number.isFinite(n) ? n : null
  }
  return null
}

function asRef (id: unknown): number | string | null {
  if (typeof id === 'number') return toId(id)
  if (typeof id !== 'string') return null
  const trimmed = id.trim()
  const numeric = recordId(trimmed)
  if (numeric !== null) return numeric
  return trimmed !== '' && trimmed.length <= 100 ? trimmed : null
}

/** Counts values first, so an oversized batch is refused before any per-item work. */
export function countValues (data: unknown): number {
  if (!Array.isArray(data)) return 0
  let n = 0
  for (const entry of data) {
    const sensors = typeof entry === 'object' && entry !== null ? (entry as { sensors?: unknown }).sensors : undefined
    n += Array.isArray(sensors) ? sensors.length : 1
  }
  return n
}

/** What parseBatch found: the values to resolve, every problem, and the reason of the first one. */
export interface ParsedBatch {
  values: PostedValue[]
  problems: FieldErrors
  /** null when there is no problem */
  reason: RejectionReason | null
}

/**
 * Checks a whole `data` array (contract: POST readings) and names every bad item. Values may be
 * numbers or numeric strings (the firmware's raw topic sends strings); timestamps any form
 * parseRecordedAt accepts, within the bounds of `timeProblem`. Plain loops, and paths built only
 * for problems: this runs for every value posted over HTTP and MQTT.
 */
export function parseBatch (data: unknown, limits: BatchLimits, now: Date): ParsedBatch {
  const problems: FieldErrors = {}
  const values: PostedValue[] = []
  let reason: RejectionReason | null = null
  const invalid = (path: string, message: string): void => {
    reason ??= 'invalid'
    addProblem(problems, path, message)
  }
  if (!Array.isArray(data)) {
    invalid('data', 'must be an array of {recorded_at, sensors: [{id, value}]}')
    return { values, problems, reason }
  }
  if (data.length === 0) invalid('data', "can't be blank")
  const latest = now.getTime() + limits.maxFutureMs
  for (let i = 0; i < data.length; i++) {
    const entry: unknown = data[i]
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) { invalid(`data[${i}]`, 'must be an object'); continue }
    const { recorded_at: recorded, sensors } = entry as { recorded_at?: unknown, sensors?: unknown }
    const recordedAt = parseRecordedAt(recorded)
    if (recordedAt === null) {
      invalid(`data[${i}].recorded_at`, recorded === undefined || recorded === null || recorded === '' ? "can't be blank" : 'is not a valid time (use YYYY-MM-DDTHH:MM:SSZ)')
    } else {
      const bad = timeProblem(recordedAt, limits, latest)
      if (bad !== null) {
        reason ??= bad.reason
        addProblem(problems, `data[${i}].recorded_at`, bad.message)
      }
    }
    if (!Array.isArray(sensors) || sensors.length === 0) { invalid(`data[${i}].sensors`, 'must be a non-empty array of {id, value}'); continue }
    for (let j = 0; j < sensors.length; j++) {
      const sensor: unknown = sensors[j]
      if (typeof sensor !== 'object' || sensor === null || Array.isArray(sensor)) { invalid(postedPath({ entry: i, index: j }), 'must be an object'); continue }
      const { id, value } = sensor as { id?: unknown, value?: unknown }
      const ref = asRef(id)
      const raw = asNumber(value)
      if (ref === null) invalid(`${postedPath({ entry: i, index: j })}.id`, 'must be a sensor id or a sensor key')
      if (raw === null) invalid(`${postedPath({ entry: i, index: j })}.value`, value === undefined || value === null ? "can't be blank" : 'must be a finite number')
      if (ref !== null && raw !== null && recordedAt !== null) values.push({ entry: i, index: j, ref, recordedAt, raw })
    }
  }
  return { values, problems, reason }
}
