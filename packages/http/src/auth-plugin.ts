import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Executor } from '@esp/db'
import { authenticateToken, checkCredentials, type Clock, errors, type TokenSigner, type Viewer } from '@esp/domain'

declare module 'fastify' {
  interface FastifyInstance {
    tokenSigner: TokenSigner
  }
  interface FastifyRequest {
    /** the authenticated caller, null when anonymous */
    viewer: Viewer | null
  }
  interface FastifyContextConfig {
    /** false: the route reads the Authorization header itself (the OAuth token endpoint) */
    authenticate?: boolean
  }
}

export interface AuthOptions {
  db: Executor
  jwtSecret: string
  clock: Clock
}

function queryToken (request: FastifyRequest): string | undefined {
  const at = request.url.indexOf('?')
  if (at === -1) return undefined
  const params = new URLSearchParams(request.url.slice(at + 1))
  return params.get('access_token') ?? params.get('bearer_token') ?? undefined
}

/**
 * Resolves `request.viewer` from `Authorization: Bearer`, `?access_token=` or `Authorization: Basic`
 * (contract: Authentication). No credentials is an anonymous caller; bad ones are a 401, so a
 * client never silently acts as a guest with a token it believes works.
 */
export const authPlugin = fp(async (app: FastifyInstance, options: AuthOptions) => {
  await app.register(fastifyJwt, { secret: options.jwtSecret, verify: { algorithms: ['HS256'] }, sign: { algorithm: 'HS256' } })
  const signer: TokenSigner = {
    sign: (claims, expiresIn) => app.jwt.sign(claims, { expiresIn }),
    verify: (token) => {
      try {
        const claims = app.jwt.verify<{ sub?: unknown, jti?: unknown }>(token)
        return typeof claims.sub === 'string' && typeof claims.jti === 'string' ? { sub: claims.sub, jti: claims.jti } : null
      } catch {
        return null
      }
    }
  }
  app.decorate('tokenSigner', signer)
  app.decorateRequest('viewer', null)

  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.authenticate === false) return
    const header = request.headers.authorization
    const bearer = header !== undefined && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : undefined
    const param = bearer === undefined ? queryToken(request) : undefined
    const token = bearer ?? param
    if (token !== undefined) {
      const viewer = token === '' ? null : await authenticateToken(options.db, signer, token, options.clock())
      if (viewer === null) throw errors.invalidToken(param !== undefined)
      request.viewer = viewer
      return
    }
    if (header !== undefined && /^basic\s+/i.test(header)) {
      const decoded = Buffer.from(header.replace(/^basic\s+/i, ''), 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      const viewer = colon <= 0 ? null : await checkCredentials(options.db, decoded.slice(0, colon), decoded.slice(colon + 1))
      if (viewer === null) throw errors.badCredentials()
      request.viewer = viewer
    }
  })
}, { name: 'esp-auth' })

/** The caller, or a 401 for routes that need one. */
export function requireViewer (request: FastifyRequest): Viewer {
  if (request.viewer === null) throw errors.unauthorized()
  return request.viewer
}
