import type { FastifyInstance, FastifyReply } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { MAX_NTH_READING } from '@esp/db'
import { asksForSeveralSensors, assertCanSee, findDeviceAccess, historiesJson, historyCostUnits, historyJson, MAX_SENSORS_PER_REQUEST, parseDeviceId, readingsHistories, readingsHistory, rollupFunctions } from '@esp/domain'
import { errorResponses, parsedParam, recordIdParam, rewrittenWhole } from '@esp/http'
import type { ApiContext } from '../../context.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])

const History = Type.Object({
  device_id: Type.Integer(),
  sensor_id: Type.Integer(),
  sensor_key: Nullable(Type.String()),
  component_id: Nullable(Type.Integer()),
  rollup: Type.String(),
  function: Type.String(),
  from: Type.String(),
  to: Type.String(),
  sample_size: Type.Integer({ description: 'raw readings examined (in a streamed answer, after readings)' }),
  // A pair, [recorded_at, value]: OpenAPI 3.0 has no tuples, so an array of two.
  readings: Type.Array(Type.Array(Type.Union([Type.String({ format: 'date-time' }), Type.Number(), Type.Null()]), { minItems: 2, maxItems: 3 }), { description: '[recorded_at, value] pairs, newest first; value null for an empty bucket; with coverage=true [recorded_at, value, readings in the bucket]' })
})

const Histories = Type.Object({
  device_id: Type.Integer(),
  rollup: Type.String(),
  function: Type.String(),
  from: Type.String(),
  to: Type.String(),
  sensors: Type.Array(Type.Object({
    sensor_id: Type.Integer(),
    sensor_key: Nullable(Type.String()),
    component_id: Nullable(Type.Integer()),
    sample_size: Type.Integer({ description: 'raw readings examined' }),
    readings: History.properties.readings
  }), { description: 'one series per sensor, all on the same buckets (null where a sensor has none)' })
}, { description: 'with sensor_ids or sensor_keys' })

/**
 * The most buckets one streamed answer holds (issue 35): about nine and a half years of minutes.
 * Counted before any work, by the buckets that can hold data; over it a request is a 400.
 */
const MAX_STREAMED_BUCKETS = 5_000_000

/** The domain parses these (history.ts) and its messages are the contract's: see parsedParam. */
const Query = Type.Object({
  sensor_id: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'sensor id (or sensor_key); one of the two is required' }))),
  sensor_key: Type.Optional(Type.String({ description: "the kit's sensor key or a sensor's default key" })),
  sensor_ids: Type.Optional(parsedParam(Type.String({ pattern: '^(all|[0-9]+(,[0-9]+)*)$', description: `several sensors in one answer, one series each on the same buckets: ids separated by commas (at most ${MAX_SENSORS_PER_REQUEST}), or all (the device's components)`, examples: ['all', '55,56'] }))),
  sensor_keys: Type.Optional(Type.String({ description: 'as sensor_ids, by key: keys separated by commas' })),
  rollup: Type.Optional(parsedParam(Type.String({ pattern: '^[0-9]{1,9}(ms|y|M|w|d|h|m|s)$', description: 'required: an integer and a unit, y, M, w, d, h, m, s or ms (e.g. 1h, 10m, 1d); 0 of any unit gives raw readings', examples: ['1h', '0s', '1ms', '1s', '1m', '1d', '1w', '1M', '1y'] }))),
  function: Type.Optional(parsedParam(Type.String({ enum: [...rollupFunctions], default: 'avg', description: 'how the values of a bucket are combined' }))),
  from: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'ISO 8601 (with or without milliseconds and offset), a date, or epoch seconds; default: 6 weeks before to' }))),
  to: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'as from; default: now. Inclusive: without a fraction of a second it means through the end of that second (so a time this API printed, such as last_reading_at, includes the reading it names); with milliseconds it is exact. Echoed as given' }))),
  all_intervals: Type.Optional(parsedParam(Type.Boolean({ default: false, description: 'true: every bucket of the range, null where empty' }))),
  coverage: Type.Optional(parsedParam(Type.Boolean({ default: false, description: 'true: each bucket carries the number of readings in it, as a third member: how complete its value is' }))),
  timezone: Type.Optional(parsedParam(Type.String({ maxLength: 64, description: 'an IANA time zone (e.g. Europe/Madrid): hours, days (from local midnight, 23 or 25 hours long when the clocks change), weeks (from the local Monday), months and years follow its wall clock; bucket times stay UTC. Default UTC; an unknown zone is a 400', examples: ['Europe/Madrid', 'America/St_Johns', 'Asia/Kathmandu'] }))),
  limit: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: MAX_NTH_READING, description: `only the oldest limit stored readings of the sensor (of each sensor, with sensor_ids) in [from, to] are aggregated, as KairosDB's metric limit did: the range ends at the limit-th reading from from; to is echoed as given. At most ${MAX_NTH_READING}` })))
})

/** Historical readings grouped by a rollup (contract: Readings), under the device privacy rules. */
export async function readingHistoryRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/devices/:device_id/readings', {
    schema: {
      tags: ['readings'],
      summary: 'Readings of one sensor of a device, grouped by a rollup, newest first',
      description: `The buckets that hold readings over the sensor's stored extent (with all_intervals, every bucket of the range). One sensor's answer of more than ${ctx.settings.maxBuckets.toLocaleString('en-US')} buckets that can hold data is streamed as it is read, with sample_size after readings; the count is made before any work from the stored hourly counts, and over ${MAX_STREAMED_BUCKETS.toLocaleString('en-US')} buckets the request is a 400 naming the bound, as is a streamed answer asked with pretty or callback (those are written whole). A failure while streaming cuts the connection, never the JSON. With sensor_ids, at most ${ctx.settings.maxBuckets.toLocaleString('en-US')} buckets a sensor. Raw readings (rollup 0s) stream the same way.`,
      operationId: 'getReadings',
      params: Type.Object({ device_id: recordIdParam('device', 20) }),
      querystring: Query,
      response: { 200: Type.Union([History, Histories]), ...errorResponses(400, 401, 404, 429) }
    }
  }, async (request, reply) => {
    const deviceId = parseDeviceId(request.params.device_id)
    const access = findDeviceAccess(request.reads.database, deviceId).then((device) => { assertCanSee(request.viewer, device) })
    // A JSON-P or pretty answer is rewritten whole by the representation plugin: not streamed.
    const enveloped = rewrittenWhole(request)
    const history = {
      runner: request.reads.history,
      now: ctx.clock,
      maxBuckets: ctx.settings.maxBuckets,
      // Paid for once its size is known, before it is read (a weighted rate limit).
      charge: async (values: number) => { await request.chargeRateLimit(historyCostUnits(values)) },
      ...(enveloped ? {} : { stream: { maxBuckets: MAX_STREAMED_BUCKETS } })
    }
    // The schema above documents the answer; its bytes are written from the buckets' numbers
    // (historyJson), where the serializer would first need them as thousands of tuples. A long
    // answer is a Readable: Fastify pipes it (backpressure), and destroys the socket if it fails
    // once its first bytes are out.
    const bytes: FastifyReply = reply.type('application/json; charset=utf-8')
    if (asksForSeveralSensors(request.query)) return await bytes.send(await historiesJson(await readingsHistories(history, deviceId, request.query, access)))
    return await bytes.send(historyJson(await readingsHistory(history, deviceId, request.query, access)))
  })
}
