import type { FastifyInstance, FastifyReply } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { assertCanSee, findDeviceAccess, parseDeviceId, historyJson, readingsHistory, rollupFunctions } from '@esp/domain'
import { errorResponses, parsedParam, recordIdParam } from '@esp/http'
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
  sample_size: Type.Integer({ description: 'raw readings examined' }),
  // A pair, [recorded_at, value]: OpenAPI 3.0 has no tuples, so an array of two.
  readings: Type.Array(Type.Array(Type.Union([Type.String({ format: 'date-time' }), Type.Number(), Type.Null()]), { minItems: 2, maxItems: 2 }), { description: '[recorded_at, value] pairs, newest first; value null for an empty bucket' })
})

/** The domain parses these (history.ts) and its messages are the contract's: see parsedParam. */
const Query = Type.Object({
  sensor_id: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: 999_999_999, description: 'sensor id (or sensor_key); one of the two is required' }))),
  sensor_key: Type.Optional(Type.String({ description: "the kit's sensor key or a sensor's default key" })),
  rollup: Type.Optional(parsedParam(Type.String({ pattern: '^[0-9]{1,9}(ms|y|M|w|d|h|m|s)$', description: 'required: an integer and a unit, y, M, w, d, h, m, s or ms (e.g. 1h, 10m, 1d); 0 of any unit gives raw readings' }))),
  function: Type.Optional(parsedParam(Type.String({ enum: [...rollupFunctions], default: 'avg', description: 'how the values of a bucket are combined' }))),
  from: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'ISO 8601 (with or without milliseconds and offset), a date, or epoch seconds; default: 6 weeks before to' }))),
  to: Type.Optional(parsedParam(Type.String({ format: 'date-time', description: 'as from; default: now' }))),
  all_intervals: Type.Optional(parsedParam(Type.Boolean({ default: false, description: 'true: every bucket of the range, null where empty' }))),
  limit: Type.Optional(parsedParam(Type.Integer({ minimum: 1, description: 'accepted from older clients and ignored: the answer is bounded by the number of buckets' })))
})

/** Historical readings grouped by a rollup (contract: Readings), under the device privacy rules. */
export async function readingHistoryRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/devices/:device_id/readings', {
    schema: {
      tags: ['readings'],
      summary: 'Readings of one sensor of a device, grouped by a rollup, newest first',
      operationId: 'getReadings',
      params: Type.Object({ device_id: recordIdParam('device', 20) }),
      querystring: Query,
      response: { 200: History, ...errorResponses(400, 401, 404, 429) }
    }
  }, async (request, reply) => {
    const deviceId = parseDeviceId(request.params.device_id)
    const access = findDeviceAccess(ctx.database.sql, deviceId).then((device) => { assertCanSee(request.viewer, device) })
    const history = await readingsHistory({ runner: ctx.history, now: ctx.clock, maxBuckets: ctx.settings.maxBuckets }, deviceId, request.query, access)
    // The schema above documents the answer; its bytes are written from the buckets' numbers
    // (historyJson), where the serializer would first need them as thousands of tuples.
    const bytes: FastifyReply = reply.type('application/json; charset=utf-8')
    return await bytes.send(historyJson(history))
  })
}
