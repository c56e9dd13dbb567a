import fastifyJwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ChangeFeed, Handle } from '@esp/db'
import { AUTH_TOPIC, Authenticator, AuthThrottle, type Clock, CredentialCache, type CredentialCacheOptions, DEFAULT_CREDENTIAL_CACHE, DEFAULT_THROTTLE, errors, type ThrottleSettings, type TokenSigner, type Viewer } from '@esp/domain'
import { createThrottleStore } from './auth-throttle.js'
import { deviceCookieOf } from './device-cookie.js'
import { clearSessionCookie, fromTrustedOrigin, isSafeMethod, sessionTokenOf } from './session-cookie.js'

declare module 'fastify' {
  interface FastifyInstance {
    tokenSigner: TokenSigner
    /** counts failed credential checks; every path that verifies a secret goes through it */
    authThrottle: AuthThrottle
    /** bearer tokens and Basic credentials, remembered briefly (domain/src/auth/credential-cache.ts) */
    authenticator: Authenticator
  }
  interface FastifyRequest {
    /** the authenticated caller, null when anonymous */
    viewer: Viewer | null
    /** the access token that authenticated the caller (Bearer, `?access_token=` or the session cookie); null otherwise */
    accessToken: string | null
    /**
     * Set when `viewer` was taken from a remembered token without reading the auth generation
     * (routes with `credentialsCheckedByRead`): the route's statement reads it, and calls
     * `confirm` (the full check, or the 401 it would give) when it is not `generation`.
     */
    credentialCheck: { generation: number, confirm: () => Promise<Viewer> } | null
  }
  interface FastifyContextConfig {
    /** false: the route reads the Authorization header itself (the OAuth token endpoint) */
    authenticate?: boolean
    /**
     * true: an anonymous caller is a 401 before the body is read. Set for every route whose
     * OpenAPI `security` names no anonymous alternative (SIGNED_IN); a route may set it itself.
     */
    viewerRequired?: boolean
    /**
     * true: neither backpressure nor the database gate turns the route away (the clustered
     * broker's auth backend, which answers from what it knows when the database is away)
     */
    ungated?: boolean
    /**
     * true: the route's one statement also reads the auth generation, after the request arrived,
     * and compares it with `request.credentialCheck` before it uses the viewer or sends anything;
     * a remembered token then costs no round trip of its own (kept reads: GET /devices/:id).
     */
    credentialsCheckedByRead?: boolean
  }
}

export interface AuthOptions {
  /** the pool (a Database): tokens and Basic credentials are checked on it */
  database: Handle
  jwtSecret: string
  clock: Clock
  /** limits on failed credential checks; the platform's defaults without them */
  throttle?: ThrottleSettings | undefined
  /** counts shared by every instance (REDIS_URL); in memory without it */
  redisUrl?: string | undefined
  /** how long and how many verified credentials are remembered; the platform's defaults without it */
  cache?: CredentialCacheOptions | undefined
  /** the process's change feed: frees remembered credentials early (correctness does not depend on it) */
  changes?: ChangeFeed | undefined
}

/** An OpenAPI `security` that every caller must meet with credentials: no `{}` among its options. */
export function requiresViewer (security: unknown): boolean {
  return Array.isArray(security) && security.length > 0 &&
    security.every((option: unknown) => typeof option === 'object' && option !== null && Object.keys(option).length > 0)
}

function queryToken (request: FastifyRequest): string | undefined {
  const at = request.url.indexOf('?')
  if (at === -1) return undefined
  const params = new URLSearchParams(request.url.slice(at + 1))
  return params.get('access_token') ?? params.get('bearer_token') ?? undefined
}

/**
 * Resolves `request.viewer` from `Authorization: Bearer`, `?access_token=`, `Authorization: Basic`
 * or, when the request names none of these, the session cookie (contract: Authentication;
 * session-cookie.ts). No credentials is an anonymous caller; bad ones are a 401, so a client never
 * silently acts as a guest with a token it believes works. Every check passes the throttle
 * (`app.authThrottle`), which the api's login routes and the MQTT broker share.
 *
 * Credentials the client sends on purpose win over the cookie the browser adds by itself (the
 * established platform read its session first, behaviour.md §1; a token a client chose to send
 * must not be overridden by whatever session the browser holds). The cookie being ambient, a
 * request it authenticates is held to more: no JSON-P (a script tag from any page would read the
 * answer), and a write only from a page of a trusted origin (cross-site request forgery).
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
  app.decorateRequest('accessToken', null)
  const throttleStore = await createThrottleStore({
    redisUrl: options.redisUrl,
    now: () => options.clock().getTime(),
    warn: (err) => { app.log.warn({ err }, 'failed logins are counted in this process only: the shared store is unreachable') }
  })
  app.addHook('onClose', throttleStore.close)
  const refused = app.hasDecorator('metrics') ? app.metrics.authThrottled : undefined
  const throttle = new AuthThrottle(throttleStore.store, options.throttle ?? DEFAULT_THROTTLE, (reason) => { refused?.inc({ reason }) }, {
    secret: options.jwtSecret,
    now: () => options.clock().getTime()
  })
  app.decorate('authThrottle', throttle)
  const authenticator = new Authenticator({ database: options.database, signer, now: options.clock, cache: new CredentialCache(options.cache ?? DEFAULT_CREDENTIAL_CACHE) })
  app.decorate('authenticator', authenticator)
  if (options.changes !== undefined) {
    const unsubscribe = options.changes.subscribe(AUTH_TOPIC, authenticator.subscriber())
    app.addHook('onClose', async () => { unsubscribe() })
  }

  app.addHook('onRoute', (route) => {
    if (route.config?.viewerRequired === undefined && requiresViewer(route.schema?.security)) route.config = { ...route.config, viewerRequired: true }
  })
  // After every onRequest hook (the rate limit counts the refused call too), before any parser:
  // a body nobody may send anonymously costs an anonymous caller nothing to parse.
  app.addHook('preParsing', async (request) => {
    if (request.viewer === null && request.routeOptions.config.viewerRequired === true) throw errors.unauthorized()
  })

  app.decorateRequest('credentialCheck', null)
  /**
   * The caller of a token: the full check, or, on a route that reads the auth generation itself,
   * the remembered caller with that check deferred to it. Either way a token that fails is the same 401.
   */
  // The throttle's gate for this caller, made only when credentials come (most requests bring none).
  const gateOf = (request: FastifyRequest): ReturnType<typeof throttle.gate> => throttle.gate(request.ip, deviceCookieOf(request))
  const byToken = async (request: FastifyRequest, token: string, failure: () => Error): Promise<Viewer> => {
    const confirm = async (): Promise<Viewer> => {
      const viewer = await authenticator.token(gateOf(request), token)
      if (viewer === null) throw failure()
      return viewer
    }
    const remembered = request.routeOptions.config.credentialsCheckedByRead === true ? authenticator.remembered(token) : undefined
    if (remembered === undefined) return await confirm()
    request.credentialCheck = { generation: remembered.generation, confirm }
    return remembered.viewer
  }

  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.authenticate === false) return
    const header = request.headers.authorization
    const bearer = header !== undefined && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : undefined
    const param = bearer === undefined ? queryToken(request) : undefined
    const token = bearer ?? param
    if (token !== undefined) {
      // Checked first: a valid token passes whatever else its address sent; a bad one counts for the address.
      request.viewer = await byToken(request, token, () => errors.invalidToken(param !== undefined))
      request.accessToken = token
      return
    }
    if (header !== undefined && /^basic\s+/i.test(header)) {
      const decoded = Buffer.from(header.replace(/^basic\s+/i, ''), 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      const login = colon <= 0 ? undefined : decoded.slice(0, colon)
      const viewer = await authenticator.basic(gateOf(request), login, decoded.slice(colon + 1))
      if (viewer === null) throw errors.badCredentials()
      request.viewer = viewer
      return
    }
    // Any Authorization header is the client's choice of credentials, even one of a scheme not read here.
    if (header !== undefined) return
    const session = sessionTokenOf(request)
    // A JSON-P answer is readable by any page that includes it: it is made for anonymous callers only.
    if (session === undefined || request.envelope?.callback !== undefined) return
    // Before the token is checked: a forged request costs no query and learns nothing of the cookie.
    if (!isSafeMethod(request.method) && !fromTrustedOrigin(request)) throw errors.crossOriginCookie()
    // The same check as a Bearer token's, so the same throttle and the same answer when it fails.
    request.viewer = await byToken(request, session, () => {
      // The browser would send it again with every request, each a 401: it is told to drop it.
      clearSessionCookie(request, reply)
      return errors.invalidToken(false)
    })
    request.accessToken = session
  })
}, { name: 'esp-auth' })

/** The caller, or a 401 for routes that need one. */
export function requireViewer (request: FastifyRequest): Viewer {
  if (request.viewer === null) throw errors.unauthorized()
  return request.viewer
}
