// Services see this package through its declarations when built (project references): these keep
// the plugins' type augmentations (route `tags`, `request.isMultipart`, route `rateLimit`) visible.
/// <reference types="@fastify/swagger" preserve="true" />
/// <reference types="@fastify/multipart" preserve="true" />
/// <reference types="@fastify/rate-limit" preserve="true" />
/// <reference types="@fastify/jwt" preserve="true" />
import { randomUUID } from 'node:crypto'
import formbody from '@fastify/formbody'
import multipart from '@fastify/multipart'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { errors, textProblem } from '@esp/domain'
import { ErrorBody } from './error-body.js'
import { clientErrorHandler, errorHandlerPlugin, frameworkErrors, MAX_PARAM_LENGTH } from './error-handler.js'
import { authPlugin, type AuthOptions } from './auth-plugin.js'
import { noRateLimit, rateLimitPlugin, type RateLimitOptions } from './rate-limit.js'
import { corsPlugin } from './cors.js'
import { healthRoutes, type ReadinessCheck } from './health.js'
import { lazyChildLogger, loggerOptions } from './logger.js'
import { metricsPlugin, metricsRoute, type MetricsOptions } from './metrics.js'
import { openapiOptions } from './openapi.js'
import { pressurePlugin, type PressureOptions } from './pressure.js'
import { databaseGatePlugin, type DatabaseHealth } from './database-health.js'
import { representationPlugin } from './representation.js'
import { httpCachePlugin } from './http-cache.js'
import { createUrlRewriter } from './versioning.js'
import { sharedSerializers } from './serializers.js'
import { bodyGuardPlugin, DEFAULT_BODY_LIMIT } from './body-guard.js'

export interface HttpSettings {
  /** absolute base URL for links; derived from the request when unset */
  publicUrl: string | undefined
  vendor: string
  versionGit: string
}

declare module 'fastify' {
  interface FastifyInstance {
    httpSettings: HttpSettings
  }
}

/** How long a client may take to send a request (Node's headersTimeout and requestTimeout). */
export interface RequestTimeouts {
  /** from the first byte of a request to the end of its headers */
  headersMs: number
  /** from the first byte of a request to the end of its body */
  requestMs: number
}

export const DEFAULT_TIMEOUTS: RequestTimeouts = { headersMs: 10_000, requestMs: 30_000 }

export interface ServerOptions extends HttpSettings {
  logLevel: string
  /** the largest body: routes that take readings in bulk set it as their bodyLimit (BODY_LIMIT_BYTES) */
  bodyLimit: number
  /** every other route's body limit (BODY_LIMIT_DEFAULT_BYTES); DEFAULT_BODY_LIMIT without it */
  defaultBodyLimit?: number
  /** DEFAULT_TIMEOUTS without them */
  timeouts?: RequestTimeouts
  trustProxy: boolean
  credentialedOrigins?: string[]
  ready: ReadinessCheck
  title: string
  /** without it every caller is anonymous (tests of the shared behaviour) */
  auth?: AuthOptions
  rateLimit?: RateLimitOptions
  /** where log lines go (tests read them); stdout by default */
  logStream?: { write: (line: string) => void }
  /** largest file in a multipart body */
  uploadMaxBytes?: number
  /** GET /metrics access and the pool it reports on; metrics are always collected */
  metrics?: MetricsOptions
  /** backpressure thresholds; without them requests are never turned away */
  pressure?: PressureOptions
  /** the process's view of its database: while it is unavailable, requests get 503 at once */
  databaseHealth?: DatabaseHealth
}

export const DOCS_PATH = '/docs'
/**
 * The /docs page shares its origin with the explorer, whose localStorage holds a session token,
 * and its "Authorize" takes tokens: it loads nothing but its own files, and no other site may
 * frame it (clickjacking its buttons). Swagger UI needs no inline script; it writes one inline
 * style, and styles run no code.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join('; ')

/** What browsers without frame-ancestors (and every browser) get on the page besides its CSP. */
function docsHeaders (_request: FastifyRequest, reply: FastifyReply, done: () => void): void {
  reply.header('x-frame-options', 'DENY').header('x-content-type-options', 'nosniff').header('referrer-policy', 'same-origin')
  done()
}

/** Where the api serves the explorer, the web app people use (packages/explorer). */
export const EXPLORER_PATH = '/explorer'

/**
 * A Fastify instance with everything the services share: one error shape, versioning, pretty and
 * JSON-P, CORS, form bodies, OpenAPI with its page at /docs, and health routes. Services register
 * their route plugins on it; it is not listening yet.
 */
export async function buildServer (options: ServerOptions): Promise<FastifyInstance> {
  const rewrite = createUrlRewriter(options.vendor)
  const defaultBodyLimit = Math.min(options.defaultBodyLimit ?? DEFAULT_BODY_LIMIT, options.bodyLimit)
  const uploadMaxBytes = options.uploadMaxBytes ?? 5 * 1024 * 1024
  const timeouts = options.timeouts ?? DEFAULT_TIMEOUTS
  // Node refuses a headers timeout longer than the request's.
  const requestMs = Math.max(timeouts.requestMs, timeouts.headersMs)
  const app = Fastify({
    logger: { ...loggerOptions(options.logLevel), ...(options.logStream !== undefined ? { stream: options.logStream } : {}) },
    childLoggerFactory: lazyChildLogger,
    // The server's limit is the small one: a route that needs more says so (largeBodyLimit).
    bodyLimit: defaultBodyLimit,
    trustProxy: options.trustProxy,
    // While closing, a request on a connection already open is still served (with Connection:
    // close) rather than answered with Fastify's own 503 body: the launcher drains, then exits.
    return503OnClosing: false,
    // drainOnClose closes idle connections itself, sparing those whose request is still unread.
    forceCloseConnections: false,
    requestTimeout: requestMs,
    genReqId: (request) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && /^[\w-]{1,64}$/.test(given) ? given : randomUUID()
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // What Fastify and Node answer before the error handler can run, in the one error shape too.
    frameworkErrors,
    clientErrorHandler,
    http: {
      // the error handler refuses a missing Host itself, in the one error shape
      requireHostHeader: false,
      headersTimeout: timeouts.headersMs,
      requestTimeout: requestMs,
      // Node checks both timeouts on this interval (30 s by default, so a limit could be overrun
      // by as much); a pass over the open connections costs little.
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(timeouts.headersMs / 4)))
    },
    rewriteUrl: (request) => rewrite(request.url ?? '/', request.headers.accept),
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers() } },
    ajv: {
      customOptions: { removeAdditional: 'all', coerceTypes: 'array', useDefaults: true, allErrors: true }
    }
  })
  app.decorate('httpSettings', {
    publicUrl: options.publicUrl,
    vendor: options.vendor,
    versionGit: options.versionGit
  })
  drainOnClose(app)
  // The id a log line carries is handed back, so a client's report can be found in the logs.
  app.addHook('onRequest', async (request, reply) => { reply.header('x-request-id', request.id) })
  app.addSchema(ErrorBody)
  await app.register(errorHandlerPlugin)
  // Measured and turned away before anything else runs (authentication already queries the pool).
  await app.register(metricsPlugin, options.metrics ?? {})
  if (options.databaseHealth !== undefined) await app.register(databaseGatePlugin, { health: options.databaseHealth, pagePaths: [DOCS_PATH, EXPLORER_PATH] })
  if (options.pressure !== undefined) await app.register(pressurePlugin, { ...options.pressure, health: options.databaseHealth })
  await app.register(corsPlugin, { credentialedOrigins: options.credentialedOrigins ?? [] })
  await app.register(bodyGuardPlugin, { default: defaultBodyLimit, large: options.bodyLimit, multipart: uploadMaxBytes + defaultBodyLimit })
  // Form bodies take the server's (small) limit, or the route's.
  await app.register(formbody)
  await app.register(multipart, { limits: { fileSize: uploadMaxBytes, files: 1, fields: 30, fieldSize: 64 * 1024 } })
  await app.register(representationPlugin)
  app.addHook('preValidation', async (request) => {
    // PostgreSQL cannot hold NUL, and jsonb not a lone surrogate (a job's payload, free JSON):
    // refused here, it is a clear 400 instead of a failed query wherever the text ends up.
    if (request.url.includes('%00')) throw errors.badRequest('Parameters must not contain NUL characters')
    const found = unstorableText(request.params) ?? unstorableText(request.body)
    if (found !== null) {
      const field = found.path.length === 0 ? 'base' : found.path.join('.')
      throw errors.badRequest(`Parameters ${found.problem}`, { [field]: [found.problem] })
    }
    // A POST without a body (parameters in the query, or multipart read by the handler) is an empty
    // object to the body schema, not a type error.
    if (request.body === undefined && request.routeOptions.schema?.body !== undefined) request.body = {}
  })
  if (options.auth !== undefined) await app.register(authPlugin, options.auth)
  else app.decorateRequest('viewer', null)
  if (options.rateLimit !== undefined) await app.register(rateLimitPlugin, options.rateLimit)
  else noRateLimit(app)
  await app.register(swagger, openapiOptions(options.title))
  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    uiConfig: { docExpansion: 'list', deepLinking: true },
    staticCSP: DOCS_CSP,
    uiHooks: { onRequest: docsHeaders }
  })
  await app.register(healthRoutes, { ready: options.ready })
  // Its onSend hook runs after representation's, on the body as it is sent.
  await app.register(httpCachePlugin)
  // After the OpenAPI plugin, which documents only the routes registered after it.
  await app.register(metricsRoute, { token: options.metrics?.token })
  return app
}

/**
 * Graceful close: a request that reached the server before the signal is answered, never reset.
 * Node's server.close() destroys the connections idle at that moment, and to Node a connection is
 * idle until it has parsed a byte of a request: one just accepted whose request is still unread
 * in its socket was destroyed with unread bytes, which the kernel answers with a reset. Closing
 * the listening socket resets what its accept backlog holds, and Node accepts one connection per
 * turn of its event loop, so under load that backlog is not short. So the server closes only
 * once a few turns in a row accepted nothing: the backlog is empty, and what the last accepted
 * connections sent is read (each is then active, and answered). While closing, every response
 * asks the client to hang up; a keep-alive connection whose response was being written when
 * close() began would otherwise stay open until Fastify's 72 s keep-alive timeout, and close()
 * wait for it, so connections that turn idle are closed as they do.
 */
function drainOnClose (app: FastifyInstance): void {
  let closing = false
  let draining: NodeJS.Timeout | undefined
  let accepted = 0
  app.server.on('connection', () => { accepted++ })
  app.addHook('preClose', async () => {
    closing = true
    // Clients that keep connecting would keep it turning: a bound, past which the rest is reset.
    const deadline = Date.now() + ACCEPT_BACKLOG_MS
    for (let quiet = 0; quiet < 3 && Date.now() < deadline;) {
      const before = accepted
      // One turn of the loop, poll phase included.
      await new Promise((resolve) => setImmediate(resolve))
      quiet = accepted === before ? quiet + 1 : 0
    }
    draining = setInterval(() => { app.server.closeIdleConnections() }, 50)
  })
  app.addHook('onSend', async (request, reply) => {
    if (closing && request.raw.httpVersionMajor === 1) reply.header('connection', 'close')
  })
  app.addHook('onClose', async () => { clearInterval(draining) })
}

/** How long closing may spend accepting the connections the kernel accepted before it. */
const ACCEPT_BACKLOG_MS = 1000

// One cheap test a string; textProblem only names what it found. NUL is what it looks for:
// eslint-disable-next-line no-control-regex
const SUSPECT_TEXT = /[\u0000\ud800-\udfff]/
const textIssue = (text: string): string | null => SUSPECT_TEXT.test(text) ? textProblem(text) : null

interface TextIssue { path: string[], problem: string }

// Plain loops: this walks every posted body, a batch of readings included, and entries() made an
// array per object. The path is built only on the way back from a find. Deeper free JSON is
// checked whole by freeJsonProblem where it is kept.
function unstorableText (value: unknown, depth = 0): TextIssue | null {
  if (typeof value === 'string') {
    const problem = textIssue(value)
    return problem === null ? null : { path: [], problem }
  }
  if (depth > 32 || value === null || typeof value !== 'object') return null
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorableText(value[i], depth + 1)
      if (found !== null) { found.path.unshift(String(i)); return found }
    }
    return null
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    const problem = textIssue(key)
    if (problem !== null) return { path: [], problem: `${problem} (in a key)` }
    const found = unstorableText((value as Record<string, unknown>)[key], depth + 1)
    if (found !== null) { found.path.unshift(key); return found }
  }
  return null
}

/** The absolute base URL for links in responses (root links, Link headers, uploads). */
export function baseUrl (request: FastifyRequest): string {
  return request.server.httpSettings.publicUrl ?? `${request.protocol}://${request.host}`
}
