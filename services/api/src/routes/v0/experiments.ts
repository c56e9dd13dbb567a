import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type TSchema, Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { ExperimentRow } from '@esp/db'
import { compileListQuery, experimentService, isAdmin, OkMessage } from '@esp/domain'
import { documentedAs, errorResponses, listQuery, rawQuery, recordIdParam, requireViewer, setPaginationHeaders, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'

const Id = Type.Object({ id: recordIdParam('experiment', 20) })
const ListQuery = listQuery(experimentService.experimentFilters)
const Experiment = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  owner_id: Type.Integer(),
  active: Type.Boolean({ description: 'started (or no start) and not ended (or no end)' }),
  is_test: Type.Boolean(),
  starts_at: Type.Union([Type.String(), Type.Null()]),
  ends_at: Type.Union([Type.String(), Type.Null()]),
  device_ids: Type.Array(Type.Integer(), { description: 'only the devices the caller may see' }),
  created_at: Type.String(),
  updated_at: Type.String()
})
// experiment-service reads the fields (BodyReader) with its own messages: Ajv takes any value.
const field = (documented: TSchema) => Type.Optional(documentedAs(Type.Unknown(), documented))
const Body = Type.Optional(Type.Object({
  name: field(Type.String({ maxLength: 255, description: 'required at creation' })),
  description: field(Type.String()),
  starts_at: field(Type.String({ format: 'date-time' })),
  ends_at: field(Type.String({ format: 'date-time' })),
  is_test: field(Type.Boolean()),
  device_ids: field(Type.Array(Type.Integer({ minimum: 1 }), { description: 'ids of devices the caller may see' })),
  'device_ids[]': field(Type.Array(Type.Integer({ minimum: 1 }), { description: 'device_ids as form fields' }))
}))

/** Contract: Experiments, at `/experiments/:id` and the contract's `/experiment/:id`. */
export async function experimentRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['experiments']
  const db = ctx.database
  const present = async (request: FastifyRequest, rows: ExperimentRow[]) =>
    await experimentService.presentExperiments(request.reads.database, rows, request.viewer, ctx.clock())

  app.get('/experiments', {
    schema: { tags, summary: 'Experiments (paginated; filters on id, name, description, owner_id, is_test, starts_at, ends_at, created_at, updated_at)', operationId: 'listExperiments', querystring: ListQuery, response: { 200: Type.Array(Experiment), ...errorResponses(400, 429) } }
  }, async (request, reply) => {
    const query = compileListQuery(rawQuery(request), experimentService.experimentFilters, { admin: isAdmin(request.viewer) })
    const result = await experimentService.listExperiments(request.reads.database, query)
    setPaginationHeaders(request, reply, { page: query.page, perPage: query.perPage, total: result.total })
    return await present(request, result.rows)
  })

  app.post('/experiments', {
    schema: { tags, summary: 'Start an experiment; the caller owns it', operationId: 'createExperiment', security: SIGNED_IN, body: Body, response: { 201: Experiment, ...errorResponses(400, 401, 422, 429) } }
  }, async (request, reply) => {
    const row = await experimentService.createExperiment(db, request.body ?? {}, requireViewer(request), ctx.clock())
    reply.code(201)
    return (await present(request, [row]))[0]
  })

  for (const base of ['/experiments/:id', '/experiment/:id']) {
    const legacy = base.startsWith('/experiment/')
    app.get(base, {
      schema: { tags, summary: 'One experiment', operationId: legacy ? 'getExperimentOlderPath' : 'getExperiment', params: Id, response: { 200: Experiment, ...errorResponses(404, 429) } }
    }, async (request) => (await present(request, [await experimentService.findExperiment(request.reads.database, request.params.id)]))[0])

    for (const method of ['PATCH', 'PUT'] as const) {
      app.route({
        method,
        url: base,
        schema: { tags, summary: 'Change an experiment (owner or admin)', operationId: `${method.toLowerCase()}Experiment${legacy ? 'OlderPath' : ''}`, security: SIGNED_IN, params: Id, body: Body, response: { 200: Experiment, ...errorResponses(400, 401, 403, 404, 422, 429) } },
        handler: async (request: FastifyRequest<{ Params: { id: string }, Body: unknown }>) => {
          const viewer = requireViewer(request)
          const row = await experimentService.updateExperiment(db, await experimentService.findExperiment(db, request.params.id), request.body ?? {}, viewer, ctx.clock())
          return (await present(request, [row]))[0]
        }
      })
    }

    app.delete(base, {
      schema: { tags, summary: 'Delete an experiment (owner or admin)', operationId: legacy ? 'deleteExperimentOlderPath' : 'deleteExperiment', security: SIGNED_IN, params: Id, response: { 200: OkMessage, ...errorResponses(401, 403, 404, 429) } }
    }, async (request) => {
      const viewer = requireViewer(request)
      await experimentService.deleteExperiment(db, await experimentService.findExperiment(db, request.params.id), viewer)
      return { message: 'OK' }
    })
  }
}
