import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { assertCanWrite, errors, findDeviceAccess, ingestReadings } from '@esp/domain'
import { documentedAs, errorResponses, largeBodyLimit, recordIdParam, SIGNED_IN } from '@esp/http'
import type { IngestRouteContext } from '../../context.js'

const Stored = Type.Object({
  id: Type.Literal('ok'),
  message: Type.String(),
  errors: Type.Null(),
  url: Type.Null(),
  stored: Type.Integer({ description: 'new readings written' }),
  duplicates: Type.Integer({ description: 'readings already stored for that sensor and time (first write wins)' })
})

const Reading = Type.Object({
  recorded_at: Type.String({ format: 'date-time', description: 'YYYY-MM-DDTHH:MM:SSZ, milliseconds allowed' }),
  sensors: Type.Array(Type.Object({
    id: Type.Union([Type.Integer(), Type.String()], { description: "a sensor id, or a key of the device's kit" }),
    value: Type.Union([Type.Number(), Type.String()], { description: 'a number, or a numeric string' })
  }, { required: ['id', 'value'] }))
})

/**
 * Posting readings: the body is checked whole, stored through the one write path, and the reply
 * comes after the commit (contract: Readings). Values may be numbers or numeric strings.
 */
export async function readingRoutes (fastify: FastifyInstance, ctx: IngestRouteContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/devices/:device_id/readings', {
    bodyLimit: largeBodyLimit(fastify),
    schema: {
      tags: ['readings'],
      summary: 'Post readings (owner or admin): {data: [{recorded_at, sensors: [{id (sensor id or kit key), value}]}]}',
      operationId: 'postReadings',
      security: SIGNED_IN,
      params: Type.Object({ device_id: recordIdParam('device', 20) }),
      body: Type.Object({
        // Checked item by item by the domain, so that every bad one is named: Ajv takes any item.
        data: Type.Optional(documentedAs(Type.Array(Type.Unknown()), Type.Array(Reading, { description: 'required: readings, each checked so that every bad one is named' })))
      }, { additionalProperties: true }),
      response: { 200: Stored, ...errorResponses(400, 401, 403, 404, 413, 422, 429) }
    }
  }, async (request) => {
    const device = await findDeviceAccess(ctx.database.sql, request.params.device_id)
    assertCanWrite(request.viewer, device)
    if (request.body.data === undefined) throw errors.parameterMissing(['data'])
    const result = await ingestReadings(ctx.ingest, device, request.body.data)
    return { id: 'ok' as const, message: `Stored ${result.stored} readings`, errors: null, url: null, stored: result.stored, duplicates: result.duplicates }
  })
}
