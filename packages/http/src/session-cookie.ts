import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * The session cookie of the current web (clients.md §2.1, §4 rule 10): it sends cookies
 * cross-origin (`withCredentials`) and never a token, so `POST /v0/sessions` also hands the access
 * token it issues to the browser as an HttpOnly cookie, which the auth plugin reads when a
 * request brings no credentials of its own. The cookie *is* that access token: verified, throttled,
 * expired and revoked exactly as a Bearer token, by the same code (credential-cache.ts).
 *
 * Over HTTPS the name has the `__Host-` prefix: browsers then keep it only when it is Secure, for
 * Path=/ and without a Domain, so a page on a sibling subdomain cannot plant a session of its
 * own choosing in the browser (session fixation by cookie tossing). Plain HTTP has no prefixed
 * name (it needs Secure), so there it is read and written without it.
 */
export const SESSION_COOKIE = 'esp_session'
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** GET, HEAD and OPTIONS change nothing: any origin may send them with the cookie. */
export const isSafeMethod = (method: string): boolean => SAFE_METHODS.has(method)

/** The value of the first cookie called `name` in a Cookie header. */
export function cookieValue (header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const at = part.indexOf('=')
    if (at !== -1 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

export const sessionCookieName = (request: FastifyRequest): string => request.protocol === 'https' ? SECURE_SESSION_COOKIE : SESSION_COOKIE

/** The session cookie this request sent; an empty one (as a clearing leaves it in some clients) is none. */
export function sessionTokenOf (request: FastifyRequest): string | undefined {
  const value = cookieValue(request.headers.cookie, sessionCookieName(request))
  return value === '' ? undefined : value
}

function attributes (request: FastifyRequest, maxAgeSeconds: number): string {
  return ['Path=/', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Lax', ...(request.protocol === 'https' ? ['Secure'] : [])].join('; ')
}

/**
 * Hands the browser its session: the access token, for as long as the token lives. SameSite=Lax:
 * other sites' pages never send it with their requests, bar top-level navigations (which are
 * safe methods); the web's origin must therefore be of the same site as the API
 * (smartcitizen.me and api.smartcitizen.me are).
 */
export function setSessionCookie (request: FastifyRequest, reply: FastifyReply, token: string, maxAgeSeconds: number): void {
  void reply.header('set-cookie', `${sessionCookieName(request)}=${token}; ${attributes(request, Math.max(0, Math.floor(maxAgeSeconds)))}`)
}

/** Tells the browser to drop its session cookie (same name and attributes, or it keeps it). */
export function clearSessionCookie (request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('set-cookie', `${sessionCookieName(request)}=; ${attributes(request, 0)}`)
}

/** `value` as a browser writes it in an Origin header (scheme, host, port unless the default), or null. */
export function originOf (value: string): string | null {
  try {
    const origin = new URL(value).origin
    return origin === 'null' ? null : origin
  } catch {
    return null
  }
}

/** The API's own origins: its public URL's, and the one this request was addressed to. */
function ownOrigins (request: FastifyRequest): Array<string | null> {
  const publicUrl = request.server.hasDecorator('httpSettings') ? request.server.httpSettings.publicUrl : undefined
  const host: string | undefined = request.host
  return [publicUrl === undefined ? null : originOf(publicUrl), host === undefined || host === '' ? null : originOf(`${request.protocol}://${host}`)]
}

/**
 * The origin of the page that sent this request: its Origin header or, without one, its Referer's
 * origin; null when it sent neither (a client that is not a browser) or one that names none
 * (`Origin: null`, from sandboxed frames and some redirects).
 */
export function requestOrigin (request: FastifyRequest): string | null {
  const origin = request.headers.origin
  if (origin !== undefined) return originOf(origin)
  const referer = request.headers.referer
  return referer === undefined ? null : originOf(referer)
}

const credentialed = (request: FastifyRequest, origin: string): boolean =>
  request.server.hasDecorator('credentialedOrigins') && request.server.credentialedOrigins.has(origin)

/** The request comes from a page of one of the configured web origins (CORS_ORIGINS). */
export function fromCredentialedOrigin (request: FastifyRequest): boolean {
  const origin = requestOrigin(request)
  return origin !== null && credentialed(request, origin)
}

/**
 * Cross-site request forgery guard for cookie-authenticated requests that change something: the
 * page that sent it must be the API's own or a configured web origin. SameSite=Lax alone is not
 * enough: a page on a sibling subdomain is of the same site, and its requests carry the cookie.
 */
export function fromTrustedOrigin (request: FastifyRequest): boolean {
  const origin = requestOrigin(request)
  return origin !== null && (credentialed(request, origin) || ownOrigins(request).includes(origin))
}
