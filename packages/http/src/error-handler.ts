import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { databaseUnavailableReason } from '@esp/db'
import { ApiError, errors, type FieldErrors, idForStatus } from '@esp/domain'
import type { ErrorBodyType } from './error-body.js'

interface ValidationIssue {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
}

/** Turns Ajv issues into `{field: [messages]}` as clients read them (`errors.username[0]`). */
export function fieldErrors (issues: ValidationIssue[]): FieldErrors {
  const result: FieldErrors = {}
  for (const issue of issues) {
    let field = issue.instancePath.replace(/^\//, '').replace(/\//g, '.')
    let message = issue.message ?? 'is invalid'
    if (issue.keyword === 'required' && typeof issue.params.missingProperty === 'string') {
      field = field === '' ? issue.params.missingProperty : `${field}.${issue.params.missingProperty}`
      message = "can't be blank"
    } else if (issue.keyword === 'additionalProperties' && typeof issue.params.additionalProperty === 'string') {
      field = issue.params.additionalProperty
      message = 'is not allowed'
    }
    const key = field === '' ? 'base' : field
    const list = result[key] ?? []
    if (!list.includes(message)) list.push(message)
    result[key] = list
  }
  return result
}

function toApiError (error: FastifyError, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error
  if (error.validation !== undefined) {
    const fields = fieldErrors(error.validation as ValidationIssue[])
    // A body that does not fit its schema is an entity the platform cannot process (422, as the
    // established platform answers model validation); a bad query or path parameter is a bad request.
    return error.validationContext === 'body' ? errors.unprocessable(fields) : errors.invalidParameters(fields)
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.malformedJson(error.message)
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      // Fastify's error does not carry the limit; every parser takes the route's (or the server's).
      return errors.payloadTooLarge(request.routeOptions.bodyLimit ?? request.server.initialConfig.bodyLimit ?? 0)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(error.message.replace(/^Unsupported Media Type:?\s*/i, ''))
    default:
      break
  }
  // The database went away under the request: a 503 to retry, not a 500 (the gate answers the next ones).
  const unavailable = databaseUnavailableReason(error)
  if (unavailable !== null) return errors.databaseUnavailable(unavailable)
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    return new ApiError({ code: error.code ?? 'ESP_CLIENT_ERROR', id: idForStatus(status), statusCode: status, message: error.message })
  }
  return errors.internal()
}

const bodyOf = (error: ApiError): ErrorBodyType => ({ id: error.id, message: error.message, errors: error.errors, url: error.url })

export function sendError (reply: FastifyReply, error: ApiError): FastifyReply {
  const body = bodyOf(error)
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value)
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(body)
}

/** One error shape for every route of every service, unknown routes included. */
export const errorHandlerPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error, request)
    // A 503 is a state the platform knows (the database went away), not a defect: a warning.
    if (apiError.statusCode === 503) request.log.warn({ err: { code: apiError.code, message: apiError.message } }, 'request refused')
    else if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
    else request.log.debug({ err: { code: apiError.code, message: apiError.message } }, 'request rejected')
    return sendError(reply, apiError)
  })
  // Node answers these itself with an empty body: an Expect it cannot meet (417), and an HTTP/1.1
  // request without Host (400, unless requireHostHeader is off, as buildServer sets it, so that
  // the refusal below has the one shape).
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const body = JSON.stringify(bodyOf(errors.expectationFailed(String(request.headers.expect ?? '').slice(0, 100))))
    response.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) })
    response.end(body)
  })
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.host === undefined && request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor >= 1) {
      return sendError(reply, errors.malformedRequest('an HTTP/1.1 request needs a Host header'))
    }
  })
  app.setNotFoundHandler((request, reply) => sendError(reply, errors.routeNotFound(request.method, request.originalUrl.split('?')[0]?.slice(0, 200) ?? '')))
}, { name: 'esp-error-handler' })

/** The router's segment limit (Fastify's maxParamLength), here so its 414 can name it. */
export const MAX_PARAM_LENGTH = 500

/**
 * Fastify's `frameworkErrors`: what its router refuses before any hook runs (a path segment over
 * maxParamLength, a malformed percent-encoding in the path). Without it Fastify writes a body of
 * its own (`{statusCode, code, error, message}`), not the one error shape.
 */
export function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const apiError = error.code === 'FST_ERR_MAX_PARAM_LENGTH'
    ? errors.uriTooLong(MAX_PARAM_LENGTH)
    : error.code === 'FST_ERR_BAD_URL' ? errors.malformedRequest('the path holds a malformed percent-encoding') : toApiError(error, request)
  if (apiError.statusCode >= 500) request.log.error({ err: error }, 'request failed')
  reply.header('x-request-id', request.id)
  void sendError(reply, apiError)
}

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser failed (headers over the limit, a request line
 * too long, bytes that are not HTTP), or a request was not received within headersTimeout or
 * requestTimeout (408), so there is no request to answer through Fastify, only the socket. The
 * one error shape is written on it as Fastify's default writes its own, then the socket is closed.
 */
export function clientErrorHandler (err: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer (Node's and Fastify's default do the same).
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  // An answer already begun on this socket (a 401 sent while the body still trickles in) must
  // not be followed by a second one: only the close is left (Node's own handler checks the same).
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
  if (inFlight?.headersSent === true) {
    socket.destroy(err)
    return
  }
  const apiError = err.code === 'HPE_HEADER_OVERFLOW'
    ? errors.headersTooLarge()
    : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? errors.requestTimeout() : errors.malformedRequest('it is not valid HTTP/1.1')
  const body = JSON.stringify(bodyOf(apiError))
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  }
  socket.destroy(err)
}
