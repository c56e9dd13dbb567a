import type { FastifyInstance } from 'fastify'
import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { errors, login, OkMessage, revokeToken } from '@esp/domain'
import { clearSessionCookie, credentialGate, errorResponses, fromCredentialedOrigin, requireViewer, sessionTokenOf, setDeviceCookie, setSessionCookie, SIGNED_IN } from '@esp/http'
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

/**
 * `POST /v0/sessions`: username (or e-mail) and password, as JSON, form fields or query (contract:
 * Authentication). `DELETE /v0/sessions` logs out.
 */
export async function sessionRoutes (fastify: FastifyInstance, ctx: ApiContext): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/sessions', {
    schema: {
      tags: ['authentication'],
      summary: 'Log in: exchange username (or e-mail) and password for an access token',
      description: 'A success also sets a device cookie (`esp_device_<user id>`, HttpOnly). Sent back on later log-ins, it lets this client in while the account is locked for others, who guessed wrong too often.\n\n' +
        'When the request comes from a page of one of the web origins allowed to send credentials (its `Origin`, or lacking one its `Referer`), ' +
        'the access token is also set as the session cookie (`__Host-esp_session` over HTTPS, `esp_session` over HTTP; HttpOnly, SameSite=Lax, Path=/, for as long as the token lives). ' +
        'A request without an `Authorization` header or `access_token` is then authenticated by it; a cookie-authenticated POST, PUT, PATCH or DELETE must come from that web origin or the API\'s own (403 otherwise). ' +
        '`DELETE /v0/sessions` ends the session.',
      operationId: 'createSession',
      body: Type.Optional(Credentials),
      response: { 200: Session, ...errorResponses(400, 422, 429) }
    }
  }, async (request, reply) => {
    const params = mergedParams(request)
    const missing = ['username', 'password'].filter((key) => params[key] === undefined)
    if (missing.length > 0) throw errors.parameterMissing(missing)
    const issued = await login(ctx.database, app.tokenSigner, credentialGate(request), {
      login: params.username ?? '',
      password: params.password ?? '',
      ttlSeconds: ctx.settings.accessTokenTtlSeconds,
      now: ctx.clock()
    })
    setDeviceCookie(request, reply, issued.viewer.id, issued.deviceCookie)
    // Only for the web (clients.md §4 rule 10): clients that are not browsers send no Origin and need
    // no cookie, and a log-in posted by any other page (login CSRF) must not plant a session.
    if (fromCredentialedOrigin(request)) setSessionCookie(request, reply, issued.token, issued.expiresIn)
    return { access_token: issued.token, token_type: 'Bearer' as const, expires_in: issued.expiresIn, user_id: issued.viewer.id }
  })

  app.delete('/sessions', {
    schema: {
      tags: ['authentication'],
      summary: 'Log out: revoke the access token of this request and clear the session cookie',
      description: 'Revokes the access token the request is authenticated with (Bearer, `access_token` or the session cookie) and the session cookie\'s, on every instance at once, and tells the browser to drop the cookie.',
      operationId: 'deleteSession',
      security: SIGNED_IN,
      response: { 200: OkMessage, ...errorResponses(401, 403, 429) }
    }
  }, async (request, reply) => {
    requireViewer(request)
    const now = ctx.clock()
    const tokens = new Set([request.accessToken, sessionTokenOf(request)].filter((token): token is string => token !== null && token !== undefined))
    for (const token of tokens) await revokeToken(ctx.database, token, now)
    clearSessionCookie(request, reply)
    return { message: 'OK' }
  })
}
