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
  /** how far ahead of the server clock a timestamp may be */
  maxFutureMs: number
  /** nothing older is accepted (a typo of a year would otherwise create decades of partitions) */
  minTime: Date
}

/** The oldest accepted reading, posted or imported: a mistyped year is refused, not stored. */
export const OLDEST_READING = new Date('1990-01-01T00:00:00Z')

export const MAX_PROBLEMS = 100
const NUMERIC = /^\s*-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/

/** Names a problem under `path`; past MAX_PROBLEMS paths the rest are left out. */
export function addProblem (problems: FieldErrors, path: string, message: string): void {
  if (Object.keys(problems).length < MAX_PROBLEMS) (problems[path] ??= []).push(message)
}

/** What is wrong with a time too far ahead (past `latest`, epoch ms) or older than the limits allow; null when it is fine. */
export function recordedAtProblem (recordedAt: Date, limits: Pick<BatchLimits, 'minTime'>, latest: number): string | null {
  if (recordedAt.getTime() > latest) return 'is too far in the future'
  if (recordedAt.getTime() < limits.minTime.getTime()) return `is before ${limits.minTime.toISOString().slice(0, 10)}`
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

/**
 * Checks a whole `data` array (contract: POST readings) and names every bad item. Values may be
 * numbers or numeric strings (the firmware's raw topic sends strings); timestamps any form
 * parseRecordedAt accepts. Plain loops, and paths built only for problems: this runs for every
 * value posted over HTTP and MQTT.
 */
export function parseBatch (data: unknown, limits: BatchLimits, now: Date): { values: PostedValue[], problems: FieldErrors } {
  const problems: FieldErrors = {}
  const values: PostedValue[] = []
  if (!Array.isArray(data)) {
    addProblem(problems, 'data', 'must be an array of {recorded_at, sensors: [{id, value}]}')
    return { values, problems }
  }
  if (data.length === 0) addProblem(problems, 'data', "can't be blank")
  const latest = now.getTime() + limits.maxFutureMs
  for (let i = 0; i < data.length; i++) {
    const entry: unknown = data[i]
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) { addProblem(problems, `data[${i}]`, 'must be an object'); continue }
    const { recorded_at: recorded, sensors } = entry as { recorded_at?: unknown, sensors?: unknown }
    const recordedAt = parseRecordedAt(recorded)
    const timeProblem = recordedAt === null
      ? (recorded === undefined || recorded === null || recorded === '' ? "can't be blank" : 'is not a valid time (use YYYY-MM-DDTHH:MM:SSZ)')
      : recordedAtProblem(recordedAt, limits, latest)
    if (timeProblem !== null) addProblem(problems, `data[${i}].recorded_at`, timeProblem)
    if (!Array.isArray(sensors) || sensors.length === 0) { addProblem(problems, `data[${i}].sensors`, 'must be a non-empty array of {id, value}'); continue }
    for (let j = 0; j < sensors.length; j++) {
      const sensor: unknown = sensors[j]
      if (typeof sensor !== 'object' || sensor === null || Array.isArray(sensor)) { addProblem(problems, postedPath({ entry: i, index: j }), 'must be an object'); continue }
      const { id, value } = sensor as { id?: unknown, value?: unknown }
      const ref = asRef(id)
      const raw = asNumber(value)
      if (ref === null) addProblem(problems, `${postedPath({ entry: i, index: j })}.id`, 'must be a sensor id or a sensor key')
      if (raw === null) addProblem(problems, `${postedPath({ entry: i, index: j })}.value`, value === undefined || value === null ? "can't be blank" : 'must be a finite number')
      if (ref !== null && raw !== null && recordedAt !== null) values.push({ entry: i, index: j, ref, recordedAt, raw })
    }
  }
  return { values, problems }
}
