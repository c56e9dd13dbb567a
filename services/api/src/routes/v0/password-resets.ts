import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { completePasswordReset, errors, nullWhenNotFound, OkMessage, presentUser, requestPasswordReset, RESET_MESSAGE, userForResetToken } from '@esp/domain'
import { baseUrl, credentialGate, errorResponses, setDeviceCookie } from '@esp/http'
import type { ApiContext } from '../../context.js'
import { mergedParams } from './params.js'

const Token = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200, description: 'the reset code of the e-mail' }) })
const unknownCode = () => errors.notFound('PasswordReset', 'token')

/** Contract: password reset in four steps (and GET for step 2, as real clients use it). */
export async function passwordResetRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const tags = ['users']

  app.post('/password_resets', {
    schema: {
      tags,
      summary: 'Step 1: e-mail a single-use reset code (email_or_username, email or username; body or query). The answer is the same whether or not the account exists',
      operationId: 'requestPasswordReset',
      body: Type.Optional(Type.Object({ email_or_username: Type.Optional(Type.String()), email: Type.Optional(Type.String()), username: Type.Optional(Type.String()) })),
      response: { 200: OkMessage, ...errorResponses(400, 429) }
    }
  }, async (request) => {
    const params = mergedParams(request)
    const identifier = params.email ?? params.username ?? params.email_or_username
    if (identifier === undefined || identifier.trim() === '') throw errors.parameterMissing(['email_or_username'])
    await requestPasswordReset(ctx.database, ctx.send, { identifier, baseUrl: baseUrl(request), ttlSeconds: ctx.settings.passwordResetTtlSeconds, now: ctx.clock() })
    return { message: RESET_MESSAGE }
  })

  for (const method of ['GET', 'POST'] as const) {
    app.route({
      method,
      url: '/password_resets/:token',
      schema: { tags, summary: 'Steps 2 and 3: the user a valid reset code belongs to', operationId: method === 'GET' ? 'getPasswordReset' : 'showPasswordReset', params: Token, response: { 200: Type.Ref('User'), ...errorResponses(404, 429) } },
      handler: async (request) => {
        // A wrong code is a failed credential check of the address; a valid one always passes.
        const user = await credentialGate(request).verifyToken(async () =>
          await nullWhenNotFound(async () => await userForResetToken(ctx.database, request.params.token, ctx.clock())))
        if (user === null) throw unknownCode()
        return presentUser(user, { viewer: null, baseUrl: baseUrl(request), devices: [] })
      }
    })
  }

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/password_resets/:token',
      schema: {
        tags,
        summary: 'Step 4: set the new password (field or query `password`); the code is used up and every access token revoked',
        operationId: method === 'PATCH' ? 'completePasswordReset' : 'completePasswordResetPut',
        params: Token,
        body: Type.Optional(Type.Object({ password: Type.Optional(Type.String()) })),
        response: { 200: Type.Ref('User'), ...errorResponses(400, 404, 422, 429) }
      },
      handler: async (request, reply) => {
        // The code first, by its hash: a wrong one costs no password hash, and is counted.
        const pending = await credentialGate(request).verifyToken(async () =>
          await nullWhenNotFound(async () => await userForResetToken(ctx.database, request.params.token, ctx.clock())))
        if (pending === null) throw unknownCode()
        const user = await completePasswordReset(ctx.database, request.params.token, mergedParams(request).password, ctx.clock())
        // The mailbox proved the owner: strangers' lockout of the account ends, this client is trusted.
        setDeviceCookie(request, reply, user.id, await app.authThrottle.proven(request.ip, user))
        return presentUser(user, { viewer: null, baseUrl: baseUrl(request), devices: [] })
      }
    })
  }
}
