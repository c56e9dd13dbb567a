import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { assertCanWrite, errors, findDeviceAccess, ingestReadings, MAX_PROBLEMS, skippedView, timeBoundsText } from '@esp/domain'
import { documentedAs, errorResponses, largeBodyLimit, recordIdParam, SIGNED_IN } from '@esp/http'
import type { IngestRouteContext } from '../../context.js'

const SensorRef = Type.Union([Type.Integer(), Type.String()], { description: 'a sensor id, or a key, as posted' })

/** Values of unknown sensors, left out while the rest is stored (issue 35): bounded, never silent. */
const Skipped = Type.Object({
  count: Type.Integer({ minimum: 0, description: 'values not stored because no sensor has their id or key (all of them)' }),
  unknown_sensors: Type.Array(SensorRef, { maxItems: MAX_PROBLEMS, description: `the distinct ids and keys skipped, in the order met, at most ${MAX_PROBLEMS}` }),
  items: Type.Array(Type.Object({
    path: Type.String({ description: 'where the value was, e.g. data[0].sensors[2]' }),
    sensor: SensorRef
  }), { maxItems: MAX_PROBLEMS, description: `the first ${MAX_PROBLEMS} values skipped` })
}, {
  description: "Values whose sensor is not known (not in the catalogue: firmware may send sensors before the catalogue has them; or a key neither the device's kit nor any sensor has). " +
    'They are skipped and the rest of the batch stored; count 0 when nothing was skipped.'
})

const Stored = Type.Object({
  id: Type.Literal('ok'),
  message: Type.String(),
  errors: Type.Null(),
  url: Type.Null(),
  stored: Type.Integer({ description: 'new readings written' }),
  duplicates: Type.Integer({ description: 'readings already stored for that sensor and time (first write wins)' }),
  skipped: Skipped
})

const reading = (bounds: string) => Type.Object({
  recorded_at: Type.String({ format: 'date-time', description: `YYYY-MM-DDTHH:MM:SSZ, milliseconds allowed; ${bounds} (a time outside is a 422 naming it)` }),
  sensors: Type.Array(Type.Object({
    id: Type.Union([Type.Integer(), Type.String()], { description: "a sensor id, or a key of the device's kit or a sensor's default key; one that no sensor has is skipped (`skipped` in the answer), the rest stored" }),
    value: Type.Union([Type.Number(), Type.String()], { description: 'a number, or a numeric string; -0 is stored as 0' })
  }, { required: ['id', 'value'] }))
})

/**
 * Posting readings: the body is checked whole, stored through the one write path, and the reply
 * comes after the commit (contract: Readings). Values may be numbers or numeric strings. Values
 * of unknown sensors are skipped and named in the answer; a malformed item refuses the batch.
 */
export async function readingRoutes (fastify: FastifyInstance, ctx: IngestRouteContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const bounds = timeBoundsText(ctx.ingest.limits)
  app.post('/devices/:device_id/readings', {
    bodyLimit: largeBodyLimit(fastify),
    schema: {
      tags: ['readings'],
      summary: 'Post readings (owner or admin): {data: [{recorded_at, sensors: [{id (sensor id or kit key), value}]}]}',
      description: `Every item is checked first. A malformed one (a blank or bad time, a time outside ${bounds}, a value that is not a number) ` +
        'is a 422 naming each problem, and nothing of the batch is written. Values whose sensor is unknown are skipped and the rest stored: ' +
        `the answer names them in \`skipped\`. At most ${ctx.ingest.limits.maxValues} values a batch (413).`,
      operationId: 'postReadings',
      security: SIGNED_IN,
      params: Type.Object({ device_id: recordIdParam('device', 20) }),
      body: Type.Object({
        // Checked item by item by the domain, so that every bad one is named: Ajv takes any item.
        data: Type.Optional(documentedAs(Type.Array(Type.Unknown()), Type.Array(reading(bounds), { description: 'required: readings, each checked so that every bad one is named' })))
      }, { additionalProperties: true }),
      response: { 200: Stored, ...errorResponses(400, 401, 403, 404, 413, 422, 429) }
    }
  }, async (request) => {
    const device = await findDeviceAccess(ctx.database, request.params.device_id)
    assertCanWrite(request.viewer, device)
    if (request.body.data === undefined) throw errors.parameterMissing(['data'])
    const result = await ingestReadings(ctx.ingest, device, request.body.data)
    const skipped = skippedView(result.skipped)
    const message = skipped.count === 0
      ? `Stored ${result.stored} readings`
      : `Stored ${result.stored} readings; skipped ${skipped.count} values of unknown sensors (${skipped.unknown_sensors.slice(0, 10).join(', ')}${skipped.unknown_sensors.length > 10 ? ', …' : ''})`
    return { id: 'ok' as const, message, errors: null, url: null, stored: result.stored, duplicates: result.duplicates, skipped }
  })
}
