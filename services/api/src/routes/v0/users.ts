import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { compileListQuery, isAdmin, OkMessage, presentUser, User, UserBody, userService, userBody } from '@esp/domain'
import { baseUrl, errorResponses, listQuery, rawQuery, requireViewer, setPaginationHeaders, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { readKept, sendKept } from './kept.js'
import { renderUser, renderUsers } from './user-view.js'

const IdOrUsername = Type.Object({ id_or_username: Type.String({ minLength: 1, maxLength: 100, description: 'user id, or username' }) })
const ListQuery = listQuery(userService.userFilters)

/** Contract: Users. Registration, lists with filters, profiles, admin role changes. */
export async function userRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['users']

  app.get('/users', {
    schema: {
      tags,
      summary: 'List users (paginated; q[<key>_<matcher>] filters on id, uuid, username, city, country_code, created_at, updated_at; role for admins)',
      operationId: 'listUsers',
      querystring: ListQuery,
      response: { 200: Type.Array(Type.Ref('User')), ...errorResponses(400, 401, 429) }
    }
  }, async (request, reply) => {
    const query = compileListQuery(rawQuery(request), userService.userFilters, { admin: isAdmin(request.viewer) })
    const { rows, total } = await userService.listUsers(request.reads.database, query)
    setPaginationHeaders(request, reply, { page: query.page, perPage: query.perPage, total })
    return await renderUsers(ctx, request, rows)
  })

  app.get('/users/:id_or_username', {
    // A kept read: remembered credentials are checked by its own statement (kept.ts readKept).
    config: { credentialsCheckedByRead: true },
    schema: { tags, summary: 'One user, by id or username', operationId: 'getUser', params: IdOrUsername, response: { 200: Type.Ref('User'), ...errorResponses(401, 404, 429) } }
  }, async (request, reply) => sendKept(reply, await readKept(ctx, request, async (caller) => await userBody(request.reads.database, request.params.id_or_username, caller))))

  app.post('/users', {
    schema: {
      tags,
      summary: 'Register: email, username and password are required',
      operationId: 'createUser',
      body: UserBody,
      response: { 201: Type.Ref('User'), ...errorResponses(400, 401, 403, 422, 429) }
    }
  }, async (request, reply) => {
    const row = await userService.registerUser(ctx.database, request.body, request.viewer)
    reply.code(201)
    // The creation response is the anonymous view with uuid null (contract: POST /users).
    return presentUser(row, { viewer: null, baseUrl: baseUrl(request), devices: [], creation: true })
  })

  const update = async (request: { params: { id_or_username: string }, body: Record<string, unknown> | undefined } & Parameters<typeof renderUser>[1]) => {
    const viewer = requireViewer(request)
    const target = await userService.findUser(ctx.database, request.params.id_or_username)
    const row = await userService.updateUser(ctx.database, target, (request.body ?? {}) as never, viewer, ctx.clock)
    return await renderUser(ctx, request, row)
  }
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/users/:id_or_username',
      schema: {
        tags,
        summary: 'Update a user (the user or an admin; only admins change role)',
        operationId: method === 'PATCH' ? 'updateUser' : 'replaceUser',
        security: SIGNED_IN,
        params: IdOrUsername,
        body: UserBody,
        response: { 200: Type.Ref('User'), ...errorResponses(400, 401, 403, 404, 422, 429) }
      },
      handler: async (request) => await update(request)
    })
  }

  app.delete('/users/:id_or_username', {
    schema: { tags, summary: 'Delete (archive) a user and their devices (the user or an admin)', operationId: 'deleteUser', security: SIGNED_IN, params: IdOrUsername, response: { 200: OkMessage, ...errorResponses(401, 403, 404, 429) } }
  }, async (request) => {
    const viewer = requireViewer(request)
    const target = await userService.findUser(ctx.database, request.params.id_or_username)
    await userService.archiveUser(ctx.database, target, viewer, ctx.clock)
    return { message: 'OK' }
  })

  void User
}
