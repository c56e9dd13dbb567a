import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { applications, OkMessage } from '@esp/domain'
import { credentialGate, errorResponses, recordIdParam, requireViewer, setDeviceCookie, SIGNED_IN } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { mergedParams } from './params.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()])
const Application = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  uid: Type.String({ description: 'the client id' }),
  secret: Nullable(Type.String({ description: 'the client secret: shown once, at creation' })),
  redirect_uri: Nullable(Type.String()),
  scopes: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String()
})
const ApplicationBody = Type.Object({ name: Type.Optional(Type.String()), redirect_uri: Type.Optional(Nullable(Type.String())), scopes: Type.Optional(Type.String()) })
const Id = Type.Object({ id: recordIdParam('application', 20) })
const TokenResponse = Type.Object({ access_token: Type.String(), token_type: Type.Literal('Bearer'), expires_in: Type.Integer(), created_at: Type.Integer() })

/** RFC 6749 §2.3.1 form-encodes Basic client credentials; a malformed escape is just a wrong secret. */
function safeDecode (value: string): string {
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

/** The older form's OAuth client applications and the standard token endpoint (password grant). */
export async function applicationRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['authentication']
  const database = ctx.database

  app.get('/applications', {
    schema: { tags, summary: 'Your OAuth client applications', operationId: 'listApplications', security: SIGNED_IN, response: { 200: Type.Array(Application), ...errorResponses(401, 429) } }
  }, async (request) => await applications.listApplications(database, requireViewer(request)))

  app.post('/applications', {
    schema: { tags, summary: 'Register a client application: returns its client id (uid) and secret', operationId: 'createApplication', security: SIGNED_IN, body: ApplicationBody, response: { 201: Application, ...errorResponses(401, 422, 429) } }
  }, async (request, reply) => {
    const created = await applications.createApplication(database, requireViewer(request), request.body, ctx.clock())
    reply.code(201)
    return created
  })

  app.get('/applications/:id', {
    schema: { tags, summary: 'One of your applications', operationId: 'getApplication', security: SIGNED_IN, params: Id, response: { 200: Application, ...errorResponses(401, 404, 429) } }
  }, async (request) => applications.presentApplication(await applications.ownApplication(database, requireViewer(request), request.params.id), null))

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/applications/:id',
      schema: { tags, summary: 'Update one of your applications', operationId: method === 'PATCH' ? 'updateApplication' : 'replaceApplication', security: SIGNED_IN, params: Id, body: ApplicationBody, response: { 200: Application, ...errorResponses(401, 404, 422, 429) } },
      handler: async (request) => await applications.updateApplication(database, requireViewer(request), request.params.id, request.body, ctx.clock())
    })
  }

  app.delete('/applications/:id', {
    schema: { tags, summary: 'Delete one of your applications', operationId: 'deleteApplication', security: SIGNED_IN, params: Id, response: { 200: OkMessage, ...errorResponses(401, 404, 429) } }
  }, async (request) => {
    await applications.deleteApplication(database, requireViewer(request), request.params.id)
    return { message: 'OK' }
  })

  // RFC 6749: client credentials may come as HTTP Basic, so this route reads Authorization itself.
  app.post('/oauth/token', {
    config: { authenticate: false },
    schema: {
      tags,
      summary: 'OAuth 2.0 token endpoint, password grant: grant_type=password, username, password, client_id, client_secret (or HTTP Basic client credentials)',
      operationId: 'oauthToken',
      body: Type.Optional(Type.Object({
        grant_type: Type.Optional(Type.String()),
        username: Type.Optional(Type.String()),
        password: Type.Optional(Type.String()),
        client_id: Type.Optional(Type.String()),
        client_secret: Type.Optional(Type.String())
      })),
      response: { 200: TokenResponse, ...errorResponses(400, 401, 429) }
    }
  }, async (request, reply) => {
    const params = mergedParams(request)
    let clientId = params.client_id
    let clientSecret = params.client_secret
    const header = request.headers.authorization
    if (header !== undefined && /^basic\s+/i.test(header)) {
      const decoded = Buffer.from(header.replace(/^basic\s+/i, ''), 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      if (colon > 0) {
        clientId = safeDecode(decoded.slice(0, colon))
        clientSecret = safeDecode(decoded.slice(colon + 1))
      }
    }
    const now = ctx.clock()
    const issued = await applications.passwordGrant(database, app.tokenSigner, credentialGate(request), {
      grantType: params.grant_type,
      clientId,
      clientSecret,
      username: params.username,
      password: params.password,
      ttlSeconds: ctx.settings.accessTokenTtlSeconds,
      now
    })
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
    setDeviceCookie(request, reply, issued.userId, issued.deviceCookie)
    return { access_token: issued.token, token_type: 'Bearer' as const, expires_in: issued.expiresIn, created_at: Math.floor(now.getTime() / 1000) }
  })
}
