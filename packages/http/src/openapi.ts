import type { SwaggerOptions, SwaggerTransformObject } from '@fastify/swagger'
import { type TProperties, type TSchema, type TString, Type } from '@fastify/type-provider-typebox'
import type { FastifySchema, RouteOptions } from 'fastify'
import { DEFAULT_PER_PAGE, type FilterSpec, matchers, MAX_PER_PAGE } from '@esp/domain'
import { ERROR_DESCRIPTIONS, errorResponses } from './error-body.js'
import { PRESSURE_EXEMPT } from './pressure.js'
import { isSafeMethod, SECURE_SESSION_COOKIE, SESSION_COOKIE } from './session-cookie.js'

/**
 * The OpenAPI document at /docs/json is generated from the route schemas (@fastify/swagger). What
 * every route shares is added here, once: its security, the error statuses the shared plugins
 * answer, form bodies. What is particular to a route (its parameters, bodies, media types, the
 * statuses its handler answers, whether it needs a signed-in caller) stays in its schema.
 */

/** Routes that answer 401 to anonymous callers declare this as their `security`. */
export const SIGNED_IN = [{ bearer: [] }, { basic: [] }, { accessToken: [] }, { sessionCookie: [] }]

/**
 * Every other route: anonymous, or signed in with any of the credentials (OpenAPI writes optional
 * authentication as the empty requirement beside the others). Wrong credentials are a 401 anywhere.
 */
const ANYONE = [{}, ...SIGNED_IN]

/** What the schema of a parameter documents, when it differs from what Ajv checks. */
const DOCUMENTED = Symbol('esp.openapi.documented')

/**
 * A query or path parameter that the domain parses and answers with the contract's own messages
 * (a non-numeric device id is a 404, a bad rollup names the units): Ajv sees a string, with the
 * same bounds as before, and the OpenAPI document shows `documented`, the value's real type with
 * its enum, pattern or range. Clients that keep to the document never meet the difference.
 */
export function parsedParam (documented: TSchema, bounds: { maxLength?: number } = {}): TString {
  const given = (documented as { description?: unknown }).description
  return documentedAs(Type.String({ ...bounds, ...(typeof given === 'string' ? { description: given } : {}) }), documented)
}

/**
 * `validation` for Ajv, `documented` in the document: for parameters and body fields that the
 * domain reads itself (BodyReader), with messages of its own that a schema must not pre-empt.
 */
export function documentedAs<T extends TSchema> (validation: T, documented: TSchema): T {
  // Enumerable, so the copies TypeBox makes (Type.Optional) keep it; Ajv reads no symbol keys.
  Object.defineProperty(validation, DOCUMENTED, { value: documented, enumerable: true })
  return validation
}

/**
 * A multipart form the handler reads itself (readMultipartForm), field by field with its own
 * messages: Fastify hands the schema an empty body, so Ajv gets one with nothing to check, and
 * the document shows the form's fields, files as binary strings.
 */
export function multipartForm (documented: TSchema): { schema: TSchema } {
  return { schema: documentedAs(Type.Object({}), documented) }
}

/** A file in a multipart form, as OpenAPI 3.0 writes it. */
export const binaryFile = (description: string): TString => Type.String({ format: 'binary', description })

/**
 * A record's id in a path (`/devices/{id}`): a positive integer. The domain reads it, and a path
 * that is not one names no record: a 404, as on the established platform, never a 400.
 */
export function recordIdParam (what: string, maxLength: number): TString {
  return parsedParam(Type.Integer({ format: 'int32', minimum: 1, description: `${what} id` }), { maxLength })
}

/** `page` and `per_page` of every list (filter-compiler.ts parses them). */
export const pageParams = {
  page: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'page number' }))),
  per_page: Type.Optional(parsedParam(Type.Integer({ minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE, description: 'items per page' })))
}

const FILTER_VALUES: Readonly<Record<string, TSchema>> = {
  integer: Type.Integer(),
  timestamp: Type.String({ format: 'date-time' }),
  uuid: Type.String({ format: 'uuid' }),
  boolean: Type.Boolean()
}
const TEXT_MATCHERS = new Set(['cont', 'start', 'end'])
const LIST_MATCHERS = new Set(['in', 'not_in'])
const NULL_MATCHERS = new Set(['null', 'not_null'])

/**
 * `q[<key>_<matcher>]` of a list, as filter-compiler.ts reads it from `spec`: one property a key
 * and matcher, typed by the key, for the deepObject `q`. Ajv takes any value, as it did: the
 * compiler answers a bad key or value with a 400 that names what is allowed.
 */
function filterParam (spec: FilterSpec): TSchema {
  const properties: Record<string, TSchema> = {}
  for (const [key, field] of Object.entries(spec)) {
    // Names say the rest; descriptions only where they add something (the document is served whole).
    const note = field.adminOnly === true ? { description: 'admins only' } : {}
    for (const matcher of matchers) {
      if (TEXT_MATCHERS.has(matcher) && field.type !== 'text') continue
      properties[`${key}_${matcher}`] = NULL_MATCHERS.has(matcher)
        ? Type.Boolean(note)
        : LIST_MATCHERS.has(matcher)
          ? Type.String({ description: `values separated by commas${field.adminOnly === true ? '; admins only' : ''}` })
          : { ...(FILTER_VALUES[field.type] ?? Type.String()), ...note }
    }
  }
  const sortable = Object.entries(spec).filter(([, field]) => field.wrap === undefined && field.adminOnly !== true).map(([key]) => key)
  properties.sort = Type.String({ description: `"<key> asc" or "<key> desc", several separated by commas; keys: ${sortable.join(', ')}` })
  const description = 'filters and sort: q[<key>_<matcher>]=value'
  return documentedAs(Type.Unknown({ description }), Type.Object(properties, { description }))
}

/** The query of a list: page, per_page and the q[...] filters of its resource, and any `extra`. */
export function listQuery<P extends TProperties> (spec: FilterSpec, extra: P = {} as P) {
  return Type.Object({ ...pageParams, q: Type.Optional(filterParam(spec)), ...extra }, { additionalProperties: true })
}

/** The object schema of a query, path or body, with each field the domain reads as documented. */
function documentedParameters (schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || !('properties' in schema)) return schema
  const properties = schema.properties as Record<string, Record<symbol, unknown>>
  const mapped = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, property[DOCUMENTED] ?? property]))
  return { ...schema, properties: mapped }
}

function documentedContent (content: Record<string, { schema: Record<symbol, unknown> }>): Record<string, { schema: unknown }> {
  return Object.fromEntries(Object.entries(content).map(([type, media]) => [type, { ...media, schema: media.schema[DOCUMENTED] ?? media.schema }]))
}

// Shown where a route's success schema describes no answer of its own (not "Default Response").
const SUCCESS_DESCRIPTIONS: Readonly<Record<string, string>> = { 200: 'OK', 201: 'Created', 202: 'Accepted: the work is queued', 204: 'No content' }
const RETRY_AFTER = { 'retry-after': { type: 'integer', description: 'seconds to wait before trying again' } }
const BODYLESS = new Set(['GET', 'HEAD'])

type Responses = Record<string, unknown>

/** Statuses the shared plugins may answer on this route, whatever its handler does. */
function commonStatuses (route: RouteOptions): number[] {
  const config: { authenticate?: boolean, rateLimit?: unknown } = route.config ?? {}
  const methods = [route.method].flat()
  // The NUL check, malformed query strings and bodies: every route.
  const statuses = [400, 500]
  if (config.authenticate !== false) statuses.push(401)
  // A write authenticated by the session cookie from a page of an untrusted origin (auth-plugin.ts).
  if (config.authenticate !== false && methods.some((m) => !isSafeMethod(m))) statuses.push(403)
  if (config.rateLimit !== false) statuses.push(429)
  if (methods.some((m) => !BODYLESS.has(m))) statuses.push(413, 415)
  if (!PRESSURE_EXEMPT.has(route.url)) statuses.push(503)
  return statuses
}

/** The swagger `transform`: a route's schema as the document shows it (the route itself is untouched). */
export function documentRoute ({ schema, url, route }: { schema: FastifySchema | undefined, url: string, route: RouteOptions }): { schema: FastifySchema, url: string } {
  const given: FastifySchema = schema ?? {}
  const own = (given.response ?? {}) as Responses
  const common = errorResponses(...commonStatuses(route).filter((s) => own[s] === undefined))
  const response: Responses = { ...common, ...own }
  for (const [status, entry] of Object.entries(response)) {
    const success = SUCCESS_DESCRIPTIONS[status]
    if (success !== undefined && typeof entry === 'object' && entry !== null && !('description' in entry)) response[status] = { ...entry, description: success }
  }
  for (const status of ['429', '503']) {
    const entry = response[status]
    if (typeof entry === 'object' && entry !== null) response[status] = { ...entry, headers: RETRY_AFTER }
  }
  const body = given.body as { content?: Record<string, { schema: Record<symbol, unknown> }> } | undefined
  // Every route reads form bodies as it reads JSON (@fastify/formbody); multipart only where said.
  const consumes = body !== undefined && body.content === undefined && given.consumes === undefined
    ? { consumes: ['application/json', 'application/x-www-form-urlencoded'] }
    : {}
  return {
    url,
    schema: {
      ...given,
      ...consumes,
      ...(given.querystring !== undefined ? { querystring: documentedParameters(given.querystring) } : {}),
      ...(given.params !== undefined ? { params: documentedParameters(given.params) } : {}),
      ...(body === undefined ? {} : { body: body.content !== undefined ? { ...body, content: documentedContent(body.content) } : documentedParameters(body) }),
      security: given.security ?? (route.config?.authenticate === false ? [] : ANYONE),
      response
    }
  }
}

interface Operation {
  parameters?: Array<{ in: string, schema?: { type?: string }, style?: string, explode?: boolean }>
  responses?: Record<string, { description?: string, $ref?: string }>
}

/**
 * The swagger `transformObject`. An object in a query string is read from bracketed keys
 * (`q[name_eq]=x`), which OpenAPI calls the deepObject style. The shared error answers, the same
 * on every operation, are written once under components/responses and referenced.
 */
export const documentObject: SwaggerTransformObject = (document) => {
  if (!('openapiObject' in document)) return document.swaggerObject
  const { openapiObject } = document
  const shared: Record<string, unknown> = {}
  for (const item of Object.values(openapiObject.paths ?? {}) as Array<Record<string, unknown>>) {
    for (const operation of Object.values(item) as Operation[]) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.schema?.type === 'object') Object.assign(parameter, { style: 'deepObject', explode: true })
      }
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const description = ERROR_DESCRIPTIONS[Number(status)]
        if (description === undefined || response.description !== description) continue
        const name = `Error${status}`
        shared[name] ??= response
        operation.responses = { ...operation.responses, [status]: { $ref: `#/components/responses/${name}` } }
      }
    }
  }
  const target = openapiObject as { components?: { responses?: Record<string, unknown> } }
  target.components = { ...target.components, responses: { ...target.components?.responses, ...shared } }
  return openapiObject
}

/** The @fastify/swagger options of every service. */
export function openapiOptions (title: string): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.0.3',
      info: {
        title,
        version: '0',
        description: 'Environmental sensing network, REST API v0. Paths work with or without the /v0 prefix. ' +
          'Authorize with an access token from `POST /v0/sessions` (bearer), or with a username and password (basic). ' +
          'Browsers on the configured web origins may instead keep the session cookie that `POST /v0/sessions` sets for them.'
      },
      // Relative: the document describes the server that serves it, whatever its address.
      servers: [{ url: '/', description: 'this server' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'an access token from POST /v0/sessions or POST /v0/oauth/token' },
          basic: { type: 'http', scheme: 'basic', description: 'username (or e-mail) and password' },
          accessToken: { type: 'apiKey', in: 'query', name: 'access_token', description: 'an access token in the query string' },
          sessionCookie: {
            type: 'apiKey',
            in: 'cookie',
            name: SECURE_SESSION_COOKIE,
            description: `the session cookie POST /v0/sessions sets for the configured web origins (\`${SESSION_COOKIE}\` over plain HTTP): ` +
              'the same access token, HttpOnly. Read only when the request has no Authorization header and no access_token; ' +
              'POST, PUT, PATCH and DELETE authenticated by it must come from the web origins or the API\'s own (Origin, else Referer), or they are refused with 403'
          }
        }
      }
    },
    transform: documentRoute,
    transformObject: documentObject,
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => typeof json.$id === 'string' ? json.$id : `def-${i}` }
  }
}
