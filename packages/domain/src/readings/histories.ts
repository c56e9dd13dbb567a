import type { Runner } from '@esp/db'
import { errors } from '../errors.js'
import { formatTimestamp } from '../time.js'
import { nextTurn } from '../turns.js'
import { listParam, recordId } from '../validation/record-id.js'
import type { RollupFunction } from './aggregate-state.js'
import { type HistoryContext, type HistoryParams, historyRequest, inOrderOfPrecedence, readBuckets, resolveSensor } from './history.js'
import { limitedTo, parseLimitParam } from './limit.js'
import { boundedWindow, type ReadWindow } from './window.js'
import { RollupSeries } from './rollup-series.js'

/** Several sensors of a device in one answer: one series each, on the same buckets. */
export interface HistoriesResult {
  device_id: number
  rollup: string
  function: RollupFunction
  from: string
  to: string
  sensors: { sensor_id: number, sensor_key: string | null, component_id: number | null, sample_size: number, readings: RollupSeries }[]
}

/** At most this many sensors in one request: a kit has 12 to 20. */
export const MAX_SENSORS_PER_REQUEST = 64

/** Whether a request names several sensors (`sensor_ids`, `sensor_keys`): the form with one series per sensor. */
export const asksForSeveralSensors = (params: HistoryParams): boolean => (params.sensor_ids ?? '') !== '' || (params.sensor_keys ?? '') !== ''

/** A list of sensors of the request. */
const sensorList = (name: string, value: string | undefined): string[] => listParam(name, value, MAX_SENSORS_PER_REQUEST, 'sensors')

type ResolvedSensor = Awaited<ReturnType<typeof resolveSensor>>

/** `sensor_ids=55,56`, `sensor_keys=t,h` or `sensor_ids=all` (the device's components). */
async function resolveSensors (runner: Runner, deviceId: number, params: HistoryParams): Promise<ResolvedSensor[]> {
  const ids = sensorList('sensor_ids', params.sensor_ids)
  if (ids.length === 1 && ids[0] === 'all') {
    return await runner.query<ResolvedSensor>(`
      select s.id, coalesce(ks.key, c.key, s.default_key) as key, c.id as component_id
      from components c
      join sensors s on s.id = c.sensor_id
      left join kit_sensors ks on ks.sensor_id = s.id and ks.kit_id = (select kit_id from devices where id = $1)
      where c.device_id = $1
      order by s.id`, [deviceId])
  }
  const byId = ids.map((id) => {
    const parsed = recordId(id)
    if (parsed === null) throw errors.badRequest('sensor_ids must be sensor ids separated by commas, or all', { sensor_ids: ['must be integers'] })
    return parsed
  })
  const byKey = sensorList('sensor_keys', params.sensor_keys)
  const found = await Promise.all([...byId.map(async (id) => await resolveSensor(runner, deviceId, id, null)), ...byKey.map(async (key) => await resolveSensor(runner, deviceId, null, key))])
  // A sensor named twice (by id and by key) is one series.
  return found.filter((sensor, i) => found.findIndex((other) => other.id === sensor.id) === i)
}

/**
 * `sensor_ids` / `sensor_keys`: each sensor's buckets read as for one sensor, side by side on the
 * pool, then put on the same bucket times: every bucket where any of them has readings (with
 * all_intervals, every bucket of the range), null where one has none.
 */
export async function readingsHistories (ctx: HistoryContext, deviceId: number, params: HistoryParams, access: Promise<unknown> = Promise.resolve()): Promise<HistoriesResult> {
  const [, answer] = await inOrderOfPrecedence(access, answerHistories(ctx, deviceId, params))
  return answer
}

async function answerHistories (ctx: HistoryContext, deviceId: number, params: HistoryParams): Promise<HistoriesResult> {
  const { rollup, fn, from, to } = historyRequest(ctx, params, !asksForSeveralSensors(params), 'sensor_ids OR sensor_keys')
  const limit = parseLimitParam(params.limit)
  const sensors = await resolveSensors(ctx.runner, deviceId, params)
  // One window for every series: their extent together, their buckets counted together.
  const window = await boundedWindow(ctx, rollup, from, to, params, deviceId, sensors.map((sensor) => sensor.id))
  const reads = await Promise.all(sensors.map(async (sensor) => {
    const base = { deviceId, sensorId: sensor.id }
    // `limit` counts each sensor's own readings: its series ends at its own limit-th one.
    let own: ReadWindow = window
    if (limit !== null && !window.empty) {
      const last = await limitedTo(ctx, { ...base, from, to, limit })
      if (last < window.to) own = { ...window, to: last, empty: last < window.from }
    }
    return await readBuckets(ctx, rollup, fn, from, to, params, base, own, window)
  }))
  const times = RollupSeries.unionOfStarts(reads.map((read) => read.readings))
  return {
    device_id: deviceId,
    rollup: rollup.text,
    function: fn,
    from: formatTimestamp(from),
    to: formatTimestamp(to),
    sensors: sensors.map((sensor, i) => ({
      sensor_id: sensor.id,
      sensor_key: sensor.key,
      component_id: sensor.component_id,
      sample_size: reads[i]?.sampleSize ?? 0,
      readings: (reads[i]?.readings ?? new RollupSeries(new Float64Array(0), new Float64Array(0))).alignedTo(times)
    }))
  }
}

/**
 * The JSON bytes of several series: each written from its numbers, as historyJson does one, with
 * a turn of the event loop between them (up to 200,000 values cost tens of milliseconds).
 */
export async function historiesJson (result: HistoriesResult): Promise<Buffer> {
  const { sensors, ...head } = result
  const parts: Buffer[] = [Buffer.from(`${JSON.stringify(head).slice(0, -1)},"sensors":[`)]
  for (const [i, { readings, ...sensor }] of sensors.entries()) {
    if (i > 0) {
      await nextTurn()
      parts.push(Buffer.from(','))
    }
    parts.push(readings.json(`${JSON.stringify(sensor).slice(0, -1)},`))
  }
  parts.push(Buffer.from(']}'))
  return Buffer.concat(parts)
}
