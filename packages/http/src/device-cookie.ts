import type { FastifyReply, FastifyRequest } from 'fastify'
import { type CredentialGate, type DeviceCookieOf, deviceCookieName } from '@esp/domain'
import { cookieValue } from './session-cookie.js'

/** The device cookies a request sent, by account (domain/src/auth/device-trust.ts). */
export function deviceCookieOf (request: FastifyRequest): DeviceCookieOf {
  const header = request.headers.cookie
  if (header === undefined) return () => undefined
  return (userId) => cookieValue(header, deviceCookieName(userId))
}

/** The credential checks of this request's caller: its address and the device cookies it sent. */
export function credentialGate (request: FastifyRequest): CredentialGate {
  return request.server.authThrottle.gate(request.ip, deviceCookieOf(request))
}

const PLAIN_PATH = /^\/[A-Za-z0-9._~/-]*$/

/**
 * Hands a device cookie to the client that just signed in. Scoped to the path it signed in at,
 * so it rides on no other request (a cookie on every read would keep shared caches from storing
 * anonymous answers); HttpOnly, so no script reads it; Secure over HTTPS.
 */
export function setDeviceCookie (request: FastifyRequest, reply: FastifyReply, userId: number, value: string): void {
  const at = request.originalUrl.indexOf('?')
  const path = at === -1 ? request.originalUrl : request.originalUrl.slice(0, at)
  const attributes = [
    `Path=${PLAIN_PATH.test(path) ? path : '/'}`,
    `Max-Age=${request.server.authThrottle.deviceCookies.ttlSeconds}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(request.protocol === 'https' ? ['Secure'] : [])
  ]
  void reply.header('set-cookie', `${deviceCookieName(userId)}=${value}; ${attributes.join('; ')}`)
}
