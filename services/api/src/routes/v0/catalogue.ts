import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { SensorRow } from '@esp/db'
import { catalogue, compileListQuery, type FilterSpec, isAdmin, OkMessage, referenceData } from '@esp/domain'
import { documentedAs, errorResponses, listQuery, rawQuery, recordIdParam, sendJsonText, setPaginationHeaders, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'

const idOf = (what: string) => Type.Object({ id: recordIdParam(what, 100) })
const SensorId = idOf('sensor')
const MeasurementId = idOf('measurement')
const KitId = idOf('kit')
const TagSensorId = idOf('tag sensor')
// Tags are found by id or by their exact name (the established platform's friendly id).
const TagKey = Type.Object({ id: Type.String({ maxLength: 100, description: 'tag id, or its exact name' }) })
type IdParams = typeof SensorId | typeof TagKey
const Open = Type.Object({}, { additionalProperties: true })
/** Every field a catalogue record takes; each resource reads its own (e.g. unit on sensors, definition on measurements). */
const INTEGER_FIELDS = new Set(['measurement_id', 'parent_id'])
const Body = Type.Optional(Type.Object(Object.fromEntries(
  ['name', 'description', 'unit', 'measurement_id', 'parent_id', 'datasheet', 'unit_definition', 'default_key', 'equation', 'reverse_equation', 'definition']
    // The services read each field (BodyReader) with their own messages: Ajv takes any value.
    .map((field) => [field, Type.Optional(documentedAs(Type.Unknown(), INTEGER_FIELDS.has(field) ? Type.Integer({ minimum: 1 }) : Type.String()))])
)))
const idParam = (request: FastifyRequest): string => (request.params as { id: string }).id

/**
 * Contract: Sensors, measurements, kits, tags and tag sensors. Reads are public and paginated;
 * writes are for admins. Components stay internal (contract: Component).
 */
export async function catalogueRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const db = ctx.database
  // Single records and what lists embed come from the reference data in memory, never older
  // than a write that returned (reference-data.ts); lists and their filters stay in SQL.
  // A generation read after the request arrived; a token's check already read one (generations.ts).
  // Of the database the request reads (read-routing.ts): a replica's copy follows that replica.
  const fresh = async (request: FastifyRequest, reply?: FastifyReply) =>
    await referenceData(request.reads.database).fresh(reply === undefined ? undefined : performance.now() - reply.elapsedTime)

  /** Filters, sort and page of a catalogue list, with the pagination headers. */
  function page (request: FastifyRequest, reply: FastifyReply, spec: FilterSpec) {
    const query = compileListQuery(rawQuery(request), spec, { admin: isAdmin(request.viewer) })
    return {
      query,
      done: <T>(result: { rows: T[], total: number }): T[] => {
        setPaginationHeaders(request, reply, { page: query.page, perPage: query.perPage, total: result.total })
        return result.rows
      }
    }
  }
  const read = (tag: string, summary: string, operationId: string, params: IdParams | { list: FilterSpec }) => ({
    schema: {
      tags: [tag],
      summary,
      operationId,
      ...('list' in params ? { querystring: listQuery(params.list) } : { params }),
      response: { 200: 'list' in params ? Type.Array(Open) : Open, ...errorResponses(400, 404, 429) }
    }
  })
  const write = (tag: string, summary: string, operationId: string, status: number, params?: IdParams) => ({
    schema: {
      tags: [tag],
      summary,
      operationId,
      // Admins only: anonymous callers are a 401, others a 403.
      security: SIGNED_IN,
      ...(params !== undefined ? { params } : {}),
      body: Body,
      response: { [status]: Open, ...errorResponses(400, 401, 403, 404, 422, 429) }
    }
  })

  // sensors
  const presentSensors = async (request: FastifyRequest, rows: SensorRow[]) => {
    const known = await fresh(request)
    return rows.map((s) => known.presentSensorRow(s))
  }
  app.get('/sensors', read('sensors', 'Sensors (paginated; filters on id, uuid, name, description, unit, measurement_id, parent_id, ancestry, created_at, updated_at)', 'listSensors', { list: catalogue.sensorFilters }), async (request, reply) => {
    const { query, done } = page(request, reply, catalogue.sensorFilters)
    const [rows, known] = await Promise.all([catalogue.listSensors(request.reads.database, query), fresh(request, reply)])
    return done(rows).map((s) => known.presentSensorRow(s))
  })
  app.get('/sensors/:id', read('sensors', 'One sensor with its measurement', 'getSensor', SensorId), async (request: FastifyRequest, reply: FastifyReply) =>
    sendJsonText(reply, catalogue.sensorIn(await fresh(request, reply), idParam(request))))
  app.post('/sensors', write('sensors', 'Add a sensor (admins); name and description are required', 'createSensor', 201), async (request, reply) => {
    const row = await catalogue.writeSensor(db, request.body, request.viewer)
    reply.code(201)
    return (await presentSensors(request, [row]))[0]
  })
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/sensors/:id',
      ...write('sensors', 'Change a sensor (admins)', `${method.toLowerCase()}Sensor`, 200, SensorId),
      handler: async (request: FastifyRequest<{ Params: { id: string } }>) => {
        catalogue.assertAdmin(request.viewer)
        const row = await catalogue.writeSensor(db, request.body, request.viewer, await catalogue.findSensor(db, idParam(request)))
        return (await presentSensors(request, [row]))[0]
      }
    })
  }

  // measurements
  app.get('/measurements', read('measurements', 'Measurements (paginated)', 'listMeasurements', { list: catalogue.measurementFilters }), async (request, reply) => {
    const { query, done } = page(request, reply, catalogue.measurementFilters)
    return done(await catalogue.listMeasurements(request.reads.database, query)).map(catalogue.presentMeasurement)
  })
  app.get('/measurements/:id', read('measurements', 'One measurement', 'getMeasurement', MeasurementId), async (request: FastifyRequest, reply: FastifyReply) =>
    sendJsonText(reply, catalogue.measurementIn(await fresh(request, reply), idParam(request))))
  app.post('/measurements', write('measurements', 'Add a measurement (admins); name (unique) and description are required', 'createMeasurement', 201), async (request, reply) => {
    const row = await catalogue.writeMeasurement(db, request.body, request.viewer)
    reply.code(201)
    return catalogue.presentMeasurement(row)
  })
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/measurements/:id',
      ...write('measurements', 'Change a measurement (admins)', `${method.toLowerCase()}Measurement`, 200, MeasurementId),
      handler: async (request: FastifyRequest<{ Params: { id: string } }>) => {
        catalogue.assertAdmin(request.viewer)
        return catalogue.presentMeasurement(await catalogue.writeMeasurement(db, request.body, request.viewer, await catalogue.findMeasurement(db, idParam(request))))
      }
    })
  }

  // kits (older form)
  app.get('/kits', read('kits', 'Kits with their sensors and measurements (older form; paginated)', 'listKits', { list: catalogue.kitFilters }), async (request, reply) => {
    const { query, done } = page(request, reply, catalogue.kitFilters)
    const [rows, known] = await Promise.all([catalogue.listKits(request.reads.database, query), fresh(request, reply)])
    // The kept copy is no older than the page: its kits' views are made once per generation.
    return done(rows).map((k) => known.kitView(k.id) ?? known.presentKitRow(k))
  })
  app.get('/kits/:id', read('kits', 'One kit with its sensors (older form)', 'getKit', KitId), async (request: FastifyRequest, reply: FastifyReply) =>
    sendJsonText(reply, catalogue.kitIn(await fresh(request, reply), idParam(request))))

  // tags
  app.get('/tags', read('tags', 'Tags that devices can carry (paginated)', 'listTags', { list: catalogue.tagFilters }), async (request, reply) => {
    const { query, done } = page(request, reply, catalogue.tagFilters)
    return done(await catalogue.listTags(request.reads.database, query)).map(catalogue.presentTag)
  })
  app.get('/tags/:id', read('tags', 'One tag, by id or name', 'getTag', TagKey), async (request: FastifyRequest, reply: FastifyReply) =>
    sendJsonText(reply, catalogue.tagIn(await fresh(request, reply), idParam(request))))
  app.post('/tags', write('tags', 'Add a tag (admins); the name is unique regardless of case', 'createTag', 201), async (request, reply) => {
    const row = await catalogue.writeTag(db, request.body, request.viewer)
    reply.code(201)
    return catalogue.presentTag(row)
  })
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/tags/:id',
      ...write('tags', 'Change a tag (admins)', `${method.toLowerCase()}Tag`, 200, TagKey),
      handler: async (request: FastifyRequest<{ Params: { id: string } }>) => {
        catalogue.assertAdmin(request.viewer)
        return catalogue.presentTag(await catalogue.writeTag(db, request.body, request.viewer, await catalogue.findTag(db, idParam(request))))
      }
    })
  }
  app.delete('/tags/:id', { schema: { tags: ['tags'], summary: 'Delete a tag and remove it from every device (admins)', operationId: 'deleteTag', security: SIGNED_IN, params: TagKey, response: { 200: OkMessage, ...errorResponses(401, 403, 404, 429) } } }, async (request) => {
    catalogue.assertAdmin(request.viewer)
    await catalogue.deleteTag(db, await catalogue.findTag(db, idParam(request)), request.viewer)
    return { message: 'OK' }
  })

  // tag sensors
  app.get('/tag_sensors', read('tags', 'Tags of sensors (paginated)', 'listTagSensors', { list: catalogue.tagSensorFilters }), async (request, reply) => {
    const { query, done } = page(request, reply, catalogue.tagSensorFilters)
    return done(await catalogue.listTagSensors(request.reads.database, query)).map(catalogue.presentTagSensor)
  })
  app.get('/tag_sensors/:id', read('tags', 'One tag of sensors', 'getTagSensor', TagSensorId), async (request: FastifyRequest, reply: FastifyReply) =>
    sendJsonText(reply, catalogue.tagSensorIn(await fresh(request, reply), idParam(request))))
  app.post('/tag_sensors', write('tags', 'Add a tag of sensors (admins); the name is required', 'createTagSensor', 201), async (request, reply) => {
    const row = await catalogue.writeTagSensor(db, request.body, request.viewer)
    reply.code(201)
    return catalogue.presentTagSensor(row)
  })
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/tag_sensors/:id',
      ...write('tags', 'Change a tag of sensors (admins)', `${method.toLowerCase()}TagSensor`, 200, TagSensorId),
      handler: async (request: FastifyRequest<{ Params: { id: string } }>) => {
        catalogue.assertAdmin(request.viewer)
        return catalogue.presentTagSensor(await catalogue.writeTagSensor(db, request.body, request.viewer, await catalogue.findTagSensor(db, idParam(request))))
      }
    })
  }
  app.delete('/tag_sensors/:id', { schema: { tags: ['tags'], summary: 'Delete a tag of sensors (admins)', operationId: 'deleteTagSensor', security: SIGNED_IN, params: TagSensorId, response: { 200: OkMessage, ...errorResponses(401, 403, 404, 429) } } }, async (request) => {
    catalogue.assertAdmin(request.viewer)
    await catalogue.deleteTagSensor(db, await catalogue.findTagSensor(db, idParam(request)), request.viewer)
    return { message: 'OK' }
  })
}
