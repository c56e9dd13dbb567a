import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { compileListQuery, search } from '@esp/domain'
import { baseUrl, errorResponses, pageCost, pageParams, rawQuery, SEARCH_COST, setPaginationHeaders } from '@esp/http'
import type { ApiContext } from '../../context.js'

/** Contract: Search result objects. Tags, devices and users matching every word of `q` as a prefix. */
export async function searchRoutes (fastify: FastifyInstance, _ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.get('/search', {
    config: { cost: (request) => SEARCH_COST + pageCost(request) },
    schema: {
      tags: ['search'],
      summary: 'Search devices, users and tags (q is required; paginated; ranked)',
      operationId: 'search',
      querystring: Type.Object({ q: Type.Optional(Type.String({ description: 'required: words, each matched as a prefix' })), ...pageParams }, { additionalProperties: true }),
      response: { 200: Type.Array(Type.Object({ id: Type.Integer(), type: Type.String() }, { additionalProperties: true })), ...errorResponses(400, 429) }
    }
  }, async (request, reply) => {
    // Only page and per_page apply here: a search takes no q[...] filters.
    const params = new URLSearchParams()
    for (const key of ['page', 'per_page']) { const v = rawQuery(request).get(key); if (v !== null) params.set(key, v) }
    const { page, perPage } = compileListQuery(params, {}, { admin: false })
    const { total, items } = await search(request.reads.database, request.query.q, { page, perPage }, request.viewer, baseUrl(request))
    setPaginationHeaders(request, reply, { page, perPage, total })
    reply.header('cache-control', 'max-age=5, public')
    return items
  })
}
