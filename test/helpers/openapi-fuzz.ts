/**
 * Requests generated from an OpenAPI 3 document, for the property-based test of every route
 * (test/fuzz/openapi.test.ts). Everything comes from the document: paths, methods, parameters with
 * their schemas, request bodies with their media types. Values are first valid-ish for what the
 * schema declares, then mutated; an untyped string still gets integers, dates and hostile text,
 * because a document that says "string" may be hiding an id or a time.
 */
import fc from 'fast-check'

export interface Schema {
  type?: string | string[]
  format?: string
  enum?: unknown[]
  minimum?: number
  maximum?: number
  maxLength?: number
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  oneOf?: Schema[]
  anyOf?: Schema[]
  $ref?: string
}
export interface Parameter {
  name: string
  in: string
  required: boolean
  schema: Schema
  /** the document's examples of the parameter (its `examples` values, or its `example`) */
  examples?: unknown[]
}
export interface Operation { method: string, path: string, parameters: Parameter[], bodies: { mediaType: string, schema: Schema }[] }

export type Role = 'anonymous' | 'other' | 'owner' | 'bad-credentials'
export interface Fixtures {
  /** ids by resource or parameter name ("devices", "users", "id_or_username", ...) */
  ids: Map<string, string[]>
  /** every fixture id, for paths the map does not name */
  all: string[]
}

/** What the test sends; `label` says which generator made the body, for grouping failures. */
export interface FuzzRequest {
  method: string
  url: string
  role: Role
  auth: 'header' | 'query' | 'basic'
  headers: Record<string, string>
  body?: string | Buffer
  label: string
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The value with its $refs replaced by what they point at, to a bounded depth (schemas may be recursive). */
function resolve (doc: Record<string, unknown>, value: unknown, depth = 0): unknown {
  if (depth > 8) return {}
  if (Array.isArray(value)) return value.map((v) => resolve(doc, v, depth + 1))
  if (!isRecord(value)) return value
  if (typeof value.$ref === 'string') {
    let node: unknown = doc
    for (const part of value.$ref.replace(/^#\//, '').split('/')) node = isRecord(node) ? node[part] : undefined
    return resolve(doc, node, depth + 1)
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(doc, v, depth + 1)]))
}

/** Every operation of the document, with $refs of parameters and bodies resolved. */
export function readOperations (document: unknown): Operation[] {
  if (!isRecord(document) || !isRecord(document.paths)) throw new Error('not an OpenAPI document')
  const doc = document
  const found: Operation[] = []
  for (const [path, item] of Object.entries(document.paths)) {
    if (!isRecord(item)) continue
    for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
      const op = item[method]
      if (!isRecord(op)) continue
      const rawParams = [...(Array.isArray(item.parameters) ? item.parameters : []), ...(Array.isArray(op.parameters) ? op.parameters : [])]
      const parameters = rawParams.map((p) => resolve(doc, p)).filter(isRecord).map((p) => ({
        name: String(p.name),
        in: String(p.in),
        required: p.required === true,
        schema: (resolve(doc, p.schema) ?? {}) as Schema,
        examples: isRecord(p.examples) ? Object.values(p.examples).map((e) => isRecord(e) ? e.value : undefined).filter((v) => v !== undefined) : 'example' in p ? [p.example] : []
      }))
      const body = resolve(doc, op.requestBody)
      const content = isRecord(body) && isRecord(body.content) ? body.content : {}
      const bodies = Object.entries(content).map(([mediaType, media]) => ({
        mediaType, schema: (isRecord(media) ? resolve(doc, media.schema) ?? {} : {}) as Schema
      }))
      found.push({ method: method.toUpperCase(), path, parameters, bodies })
    }
  }
  return found
}

// ---- values ---------------------------------------------------------------------------------

/** Dates and times the platform must parse or refuse: valid ones too (2026-11-25 was a 500). */
export const ODD_DATES = ['2026-11-25', '2026-11-25T10:00:00Z', '2026-11-25T10:00:00.123456Z', '2026-11-25 10:00', '2026-11-25T10:00:00+14:00',
  '2026-11-25T10:00:00-12:00', '2026-03-29T02:30:00+01:00', '2026-02-31', '2026-11-25T25:00Z', '+275760-09-13', '-271821-04-19T00:00:00Z',
  '0000-01-01', '9999-12-31T23:59:59.999Z', '1764028800', '1764028800000', 'now', 'yesterday', '2026-W48', '25/11/2026']
export const ODD_NUMBERS = ['0', '-1', '1', '2147483647', '2147483648', '-2147483649', '9007199254740992', '9007199254740993', '1e309', '-1e309',
  '1.5', '-0', 'NaN', 'Infinity', '0x10', '1e3', ' 1', '01', '99999999999999999999999']
export const HOSTILE = ['', ' ', 'null', 'true', 'undefined', '\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '🙂🙂', 'Ǆ̈́ß', '\u202egnp.exe', '../../etc/passwd',
  "' or 1=1 --", '%', '%00', '%zz', '[]', '{}', '<script>alert(1)</script>', ',', 'a,b,,c', '\r\nX-Injected: 1', '$gt', '*']
const numberValues = [0, -1, 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2, 1.5, -0, Number.MAX_VALUE, Number.MIN_VALUE]

/** A huge string: long enough to pass any sane limit, small enough for many runs. */
const huge = fc.constantFrom('x'.repeat(300), 'é'.repeat(3000), 'x'.repeat(20_000))
const oddText = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HOSTILE, ...ODD_NUMBERS, ...ODD_DATES) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: huge }
)

/** A string for a parameter or a text field: declared values first, then ids, numbers, dates, junk. */
export function stringFor (schema: Schema, fixtures: string[]): fc.Arbitrary<string> {
  const declared: fc.Arbitrary<string>[] = []
  if (Array.isArray(schema.enum) && schema.enum.length > 0) declared.push(fc.constantFrom(...schema.enum.map(String)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  if (type === 'integer' || type === 'number') {
    declared.push(fc.integer({ min: schema.minimum ?? -5, max: Math.min(schema.maximum ?? 2 ** 31, 2 ** 31) }).map(String))
  }
  if (type === 'boolean') declared.push(fc.constantFrom('true', 'false', '1', '0'))
  if (schema.format === 'date-time' || schema.format === 'date') declared.push(fc.constantFrom(...ODD_DATES))
  if (fixtures.length > 0) declared.push(fc.constantFrom(...fixtures))
  declared.push(fc.string({ maxLength: Math.min(schema.maxLength ?? 20, 20) }))
  return fc.oneof({ weight: 3, arbitrary: fc.oneof(...declared) }, { weight: 2, arbitrary: oddText })
}

/** A JSON value for a schema: mostly what it declares, sometimes a wrong type or a boundary. */
export function jsonFor (schema: Schema, fixtures: string[], depth = 0): fc.Arbitrary<unknown> {
  const wrong: fc.Arbitrary<unknown> = fc.oneof(
    fc.constantFrom<unknown>(null, true, [], {}, { $gt: '' }, ...numberValues),
    fc.array(fc.constantFrom(...numberValues, '1', ''), { minLength: 1, maxLength: 3 }),
    oddText,
    fc.constantFrom(...ODD_DATES),
    fixtures.length > 0 ? fc.constantFrom(...fixtures.map(Number).filter(Number.isFinite)) : fc.constant(1)
  )
  const variant = schema.oneOf ?? schema.anyOf
  if (variant !== undefined && variant.length > 0) return fc.oneof(...variant.map((s) => jsonFor(s, fixtures, depth)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  let right: fc.Arbitrary<unknown>
  if (Array.isArray(schema.enum) && schema.enum.length > 0) right = fc.constantFrom(...schema.enum)
  else if (type === 'integer') right = fc.integer({ min: schema.minimum ?? -2, max: Math.min(schema.maximum ?? 2 ** 31, 2 ** 31) })
  else if (type === 'number') right = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(...numberValues))
  else if (type === 'boolean') right = fc.boolean()
  else if (type === 'string') right = stringFor(schema, fixtures)
  else if (type === 'array' && depth < 3) right = fc.array(jsonFor(schema.items ?? {}, fixtures, depth + 1), { maxLength: 4 })
  else if ((type === 'object' || schema.properties !== undefined) && depth < 3) right = objectFor(schema, fixtures, depth + 1)
  else right = wrong // untyped: anything goes, and ids, numbers and dates are the likely meanings
  return fc.oneof({ weight: 3, arbitrary: right }, { weight: 1, arbitrary: wrong })
}

/** An object for a schema, then missing required fields and extra ones (mass assignment, __proto__). */
function objectFor (schema: Schema, fixtures: string[], depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {}
  const model = Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, jsonFor(s, fixtures, depth)]))
  const extra = fc.dictionary(fc.constantFrom('id', 'owner_id', 'user_id', 'role', 'is_admin', 'constructor', '__proto__', 'created_at', 'x'.repeat(300), ''),
    jsonFor({}, fixtures, depth), { maxKeys: 2 })
  return fc.tuple(fc.record(model, { requiredKeys: [] }), fc.option(extra, { freq: 3 }))
    .map(([fields, more]) => (more === null ? fields : { ...fields, ...more }))
}

// ---- bodies -------------------------------------------------------------------------------------

/** `depth` levels of nesting inside one field of an object: the stack-overflow case. */
export const deeplyNested = (key: string, depth: number): string => `{"${key}":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`

function multipartOf (fields: Record<string, unknown>, boundary: string, end = true): string {
  const parts = Object.entries(fields).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${typeof v === 'string' ? v : JSON.stringify(v)}\r\n`)
  parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\nrecorded_at,55\r\n2026-11-25T10:00:00Z,1\r\n`)
  return parts.join('') + (end ? `--${boundary}--\r\n` : '')
}

const formOf = (fields: Record<string, unknown>): string =>
  Object.entries(fields).map(([k, v]) => `${pct(k)}=${pct(typeof v === 'string' ? v : JSON.stringify(v) ?? '')}`).join('&')

const csvOf = (fields: Record<string, unknown>): string =>
  `recorded_at,${Object.keys(fields).join(',')}\n2026-11-25T10:00:00Z,${Object.values(fields).map((v) => JSON.stringify(v)).join(',')}\n`

/** The body as the declared media type carries it; JSON text for any type this does not know. */
function encode (mediaType: string, fields: Record<string, unknown>, json: string, boundary: string): string {
  if (mediaType.startsWith('multipart/')) return multipartOf(fields, boundary)
  if (mediaType === 'application/x-www-form-urlencoded') return formOf(fields)
  if (mediaType === 'text/csv') return csvOf(fields)
  return json
}

interface Body { headers: Record<string, string>, body: string | Buffer, label: string }

/** A body in every way a client can get one wrong: declared media types, others, malformed, huge. */
export function bodyFor (op: Operation, fixtures: string[], bodyLimit: number): fc.Arbitrary<Body> {
  const declared = op.bodies.length > 0 ? op.bodies : [{ mediaType: 'application/json', schema: {} }]
  const json = 'application/json'
  const perType = declared.map(({ mediaType, schema }) => jsonFor(schema, fixtures).chain((value) => {
    const fields = isRecord(value) ? value : { value }
    const text = JSON.stringify(value) ?? 'null'
    const boundary = '----fuzz7MA4YWxkTrZu0gW'
    return fc.constantFrom<Body>(
      { headers: { 'content-type': mediaType.startsWith('multipart/') ? `${mediaType}; boundary=${boundary}` : mediaType }, body: encode(mediaType, fields, text, boundary), label: `${mediaType} from schema` },
      { headers: { 'content-type': json }, body: text, label: 'JSON from schema' },
      { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: formOf(fields), label: 'form' },
      { headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: multipartOf(fields, boundary), label: 'multipart' },
      { headers: { 'content-type': 'multipart/form-data' }, body: multipartOf(fields, boundary), label: 'multipart without boundary' },
      { headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: multipartOf(fields, boundary, false), label: 'unterminated multipart' },
      { headers: { 'content-type': `multipart/form-data; boundary=${'b'.repeat(300)}` }, body: multipartOf(fields, 'b'.repeat(300)), label: 'multipart with a 300-character boundary' },
      { headers: { 'content-type': 'multipart/form-data; boundary=zzz' }, body: multipartOf(fields, boundary), label: 'multipart with the wrong boundary' },
      { headers: { 'content-type': json }, body: text.replace(/:(\s*)(-?\d+|null|true|false|"[^"]*")/, ':$11e309'), label: 'JSON with 1e309' },
      { headers: { 'content-type': json }, body: text.replace(/:(\s*)(-?\d+|null|true|false|"[^"]*")/, ':$199999999999999999999999'), label: 'JSON with a 24-digit number' }
    )
  }))
  const keys = [...new Set(declared.flatMap((d) => Object.keys(d.schema.properties ?? {})))]
  const malformed = fc.constantFrom(...(keys.length > 0 ? keys : ['meta'])).chain((firstKey) => fc.constantFrom<Body>(
    { headers: { 'content-type': json }, body: '{"name":', label: 'truncated JSON' },
    { headers: { 'content-type': json }, body: "{'name': 'x'}", label: 'single-quoted JSON' },
    { headers: { 'content-type': json }, body: '{"a":1,}', label: 'trailing comma' },
    { headers: { 'content-type': json }, body: '\ufeff{}', label: 'JSON with a BOM' },
    { headers: { 'content-type': json }, body: `{"${firstKey}":"\\ud800"}`, label: 'lone surrogate escape' },
    { headers: { 'content-type': json }, body: `{"${firstKey}":"a\\u0000b"}`, label: 'NUL escape' },
    { headers: { 'content-type': json }, body: `{"${firstKey}":"a\u0000b"}`, label: 'raw NUL in JSON' },
    { headers: { 'content-type': json }, body: '{"__proto__":{"role":"admin"},"constructor":{"prototype":{"x":1}}}', label: 'prototype keys' },
    { headers: { 'content-type': json }, body: deeplyNested(firstKey, 5000), label: 'object nested 5,000 levels' },
    { headers: { 'content-type': json }, body: `${'['.repeat(5000)}${']'.repeat(5000)}`, label: 'array nested 5,000 levels' },
    { headers: { 'content-type': json }, body: `{"${firstKey}":"${'x'.repeat(bodyLimit + 10)}"}`, label: 'body over the limit' },
    { headers: { 'content-type': json }, body: '', label: 'empty JSON body' },
    { headers: { 'content-type': json }, body: 'null', label: 'JSON null' },
    { headers: { 'content-type': json }, body: '[1,2]', label: 'JSON array' },
    { headers: { 'content-type': 'application/json; charset=utf-16' }, body: '{}', label: 'JSON in utf-16' },
    { headers: { 'content-type': 'text/xml' }, body: '<a/>', label: 'XML' },
    { headers: { 'content-type': 'text/csv' }, body: 'recorded_at,55\n2026-02-31T00:00:00Z,1e309\n', label: 'CSV with odd values' },
    { headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from([0, 255, 254, 0xed, 0xa0, 0x80]), label: 'binary' },
    { headers: { 'content-type': 'multipart/form-data; boundary=' }, body: '--\r\n', label: 'multipart with an empty boundary' },
    { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `a[${'['.repeat(3000)}]=1&%zz=%ff&name=%00`, label: 'odd form' },
    { headers: { 'content-type': '' }, body: '{}', label: 'empty content type' },
    { headers: { 'content-type': 'application/json, text/html' }, body: '{}', label: 'two content types' }
  ))
  return fc.oneof({ weight: 3, arbitrary: fc.oneof(...perType) }, { weight: 2, arbitrary: malformed })
}

// ---- URLs -------------------------------------------------------------------------------------

/** Percent-encoding that does not throw on a lone surrogate: it sends the surrogate's UTF-8 bytes (invalid UTF-8). */
export function pct (value: string): string {
  try {
    return encodeURIComponent(value)
  } catch {
    return [...value].map((c) => {
      const code = c.charCodeAt(0)
      if (code < 0xd800 || code > 0xdfff) return encodeURIComponent(c)
      return [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('')
    }).join('')
  }
}

/** Ids for a path parameter: the fixtures this resource's name points at, any fixture, and bad ids. */
function pathValue (op: Operation, param: Parameter, fixtures: Fixtures): fc.Arbitrary<string> {
  const segments = op.path.split('/')
  const resource = segments[segments.indexOf(`{${param.name}}`) - 1] ?? ''
  const named = [...(fixtures.ids.get(param.name) ?? []), ...(fixtures.ids.get(resource) ?? [])]
  return fc.oneof(
    { weight: 5, arbitrary: named.length > 0 ? fc.constantFrom(...named) : fc.constantFrom(...fixtures.all) },
    { weight: 1, arbitrary: fc.constantFrom(...fixtures.all) },
    { weight: 3, arbitrary: stringFor(param.schema, []) }
  )
}

/** Query pairs: declared parameters (present or not), list filters, and extra keys. */
function queryFor (op: Operation, fixtures: Fixtures, filterKeys: string[]): fc.Arbitrary<[string, string][]> {
  const declared = op.parameters.filter((p) => p.in === 'query').map((p) =>
    fc.option(stringFor(p.schema, fixtures.all).map((v): [string, string] => [p.name, v]), { freq: 2 }))
  const filter = filterKeys.length === 0
    ? fc.constant(null)
    : fc.option(filterPair(filterKeys, fixtures.all), { freq: 2 })
  const extra = fc.option(fc.tuple(fc.constantFrom('page', 'per_page', 'pretty', 'callback', 'sort', 'q', 'q[]', 'q[sort]', 'from', 'to', 'access%5Ftoken', 'x'.repeat(300), '%00', 'limit'),
    oddText).map(([k, v]): [string, string] => [k, v]), { freq: 3 })
  return fc.tuple(fc.tuple(...declared), filter, extra).map(([params, f, x]) =>
    [...params, f, x].filter((p): p is [string, string] => p !== null))
}

export const MATCHERS = ['eq', 'not_eq', 'cont', 'start', 'end', 'in', 'not_in', 'lt', 'lteq', 'gt', 'gteq', 'null', 'not_null']

/** One `q[<key>_<matcher>]` with a valid or an invalid value, and sorts on the same keys. */
export function filterPair (keys: string[], ids: string[]): fc.Arbitrary<[string, string]> {
  const value = fc.oneof(
    fc.constantFrom(...ODD_DATES, ...ODD_NUMBERS, '1', '0', 'true', 'false', '2026-11-25,2026-11-26', '1,2,3', '6f1e3c1c-4b5a-4d5e-9f00-0123456789ab'),
    fc.constantFrom(...ids, ...HOSTILE)
  )
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(fc.constantFrom(...keys), fc.constantFrom(...MATCHERS), value).map(([k, m, v]): [string, string] => [`q[${k}_${m}]`, v]) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...keys), fc.constantFrom('asc', 'desc', 'sideways')).map(([k, d]): [string, string] => ['q[sort]', `${k} ${d}`]) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...keys), value).map(([k, v]): [string, string] => [`q[${k}_in][]`, v]) }
  )
}

/** GET before writes, DELETE last, the caller's own account at the very end: fixtures live as long as possible. */
export const operationOrder = (op: Operation): number => ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].indexOf(op.method) + (op.path.startsWith('/v0/me') || op.path.includes('session') ? 10 : 0)

/** Every request the test sends to one operation. */
export function requestFor (op: Operation, fixtures: Fixtures, options: { filterKeys: string[], bodyLimit: number }): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.parameters.filter((p) => p.in === 'path')
  const path = fc.tuple(...pathParams.map((p) => pathValue(op, p, fixtures))).map((values) =>
    pathParams.reduce((url, p, i) => url.replace(`{${p.name}}`, pct(values[i] ?? '')), op.path))
  const sendsBody = op.bodies.length > 0 || op.method !== 'GET'
  const body = sendsBody ? fc.option(bodyFor(op, fixtures.all, options.bodyLimit), { freq: 8 }) : fc.option(bodyFor(op, fixtures.all, options.bodyLimit), { freq: 1, nil: null })
  return fc.record({
    role: fc.constantFrom<Role>('anonymous', 'other', 'owner', 'owner', 'bad-credentials'),
    auth: fc.constantFrom<FuzzRequest['auth']>('header', 'header', 'query', 'basic'),
    path,
    query: queryFor(op, fixtures, options.filterKeys),
    body
  }).map(({ role, auth, path, query, body }) => {
    const search = query.map(([k, v]) => `${k.includes('%') ? k : pct(k)}=${pct(v)}`).join('&')
    return {
      method: op.method,
      url: search === '' ? path : `${path}?${search}`,
      role,
      auth,
      headers: body === null ? {} : body.headers,
      ...(body === null ? {} : { body: body.body }),
      label: body === null ? 'no body' : body.label
    }
  })
}
