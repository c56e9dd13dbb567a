import type { FastifyReply, FastifyRequest } from 'fastify'
import { CredentialsToConfirm, type KeptBody, type ReadingCaller } from '@esp/domain'
import { baseUrl } from '@esp/http'
import type { ApiContext } from '../../context.js'

/**
 * A read of kept representations (domain representations.ts) for this request. A caller whose
 * token was remembered without reading the auth generation (auth-plugin's `credentialCheck`) is
 * checked by the read's own statement; when that generation moved, the token is checked in full
 * (the 401 of a revoked one) and the read made again for whoever it names now.
 */
export async function readKept<T> (ctx: ApiContext, request: FastifyRequest, read: (caller: ReadingCaller) => Promise<T>): Promise<T> {
  const caller = (): ReadingCaller => ({
    cache: ctx.representations,
    viewer: request.viewer,
    baseUrl: baseUrl(request),
    now: ctx.clock(),
    credentialsGeneration: request.credentialCheck?.generation
  })
  try {
    return await read(caller())
  } catch (err) {
    const check = request.credentialCheck
    if (!(err instanceof CredentialsToConfirm) || check === null) throw err
    request.credentialCheck = null
    request.viewer = await check.confirm()
    return await read(caller())
  }
}

/**
 * Sends kept JSON as its bytes, with the entity tag of its digest (the cache hook answers 304 by
 * it): the route's serializer is not run, the body is its output already.
 */
export function sendKept (reply: FastifyReply, kept: KeptBody): FastifyReply {
  return reply.header('etag', `W/"${kept.digest}"`).type('application/json; charset=utf-8').send(kept.body)
}
