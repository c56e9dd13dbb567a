import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { errors, login } from '@esp/domain'
import { credentialGate, errorResponses, setDeviceCookie } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { mergedParams } from './params.js'

const Session = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  user_id: Type.Integer()
})

const Credentials = Type.Object({
  username: Type.Optional(Type.String({ description: 'username or e-mail' })),
  password: Type.Optional(Type.String())
})

/** `POST /v0/sessions`: username (or e-mail) and password, as JSON, form fields or query (contract: Authentication). */
export async function sessionRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/sessions', {
    schema: {
      tags: ['authentication'],
      summary: 'Log in: exchange username (or e-mail) and password for an access token',
      description: 'A success also sets a device cookie (`esp_device_<user id>`, HttpOnly). Sent back on later log-ins, it lets this client in while the account is locked for others, who guessed wrong too often.',
      operationId: 'createSession',
      body: Type.Optional(Credentials),
      response: { 200: Session, ...errorResponses(400, 422, 429) }
    }
  }, async (request, reply) => {
    const params = mergedParams(request)
    const missing = ['username', 'password'].filter((key) => params[key] === undefined)
    if (missing.length > 0) throw errors.parameterMissing(missing)
    const issued = await login(ctx.database.db, app.tokenSigner, credentialGate(request), {
      login: params.username ?? '',
      password: params.password ?? '',
      ttlSeconds: ctx.settings.accessTokenTtlSeconds,
      now: ctx.clock()
    })
    setDeviceCookie(request, reply, issued.viewer.id, issued.deviceCookie)
    return { access_token: issued.token, token_type: 'Bearer' as const, expires_in: issued.expiresIn, user_id: issued.viewer.id }
  })
}
