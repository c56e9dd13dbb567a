import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import SwaggerParser from '@apidevtools/swagger-parser'
import t from 'tap'
import { bearer, signUp } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'
import { repoRoot } from '@esp/test-helpers/process'

interface Parameter { in: string, name: string, schema?: Record<string, unknown> }
interface Operation {
  operationId?: string
  security?: Array<Record<string, string[]>>
  parameters?: Parameter[]
  requestBody?: { content: Record<string, unknown> }
  responses: Record<string, Response>
}
interface Response { description: string, $ref?: string, content?: Record<string, { schema?: { $ref?: string } }> }
interface Document { paths: Record<string, Record<string, Operation>>, components: { responses?: Record<string, Response> } }

interface LintProblem { ruleId: string, severity: string, message: string, location: Array<{ pointer?: string }> }

/**
 * `redocly lint` of the file, with the repository's redocly.yaml, as JSON. It must not need the
 * network: no telemetry, no update check, and a proxy that goes nowhere for anything else.
 */
async function redoclyLint (file: string): Promise<{ problems: LintProblem[] }> {
  const bin = path.join(repoRoot, 'node_modules', '.bin', 'redocly')
  const child = spawn(bin, ['lint', file, '--format=json', '--max-problems=1000', `--config=${path.join(repoRoot, 'redocly.yaml')}`], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      CI: 'true',
      HTTP_PROXY: 'http://127.0.0.1:9',
      HTTPS_PROXY: 'http://127.0.0.1:9'
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  let err = ''
  child.stdout.on('data', (chunk: Buffer) => { out += chunk.toString('utf8') })
  child.stderr.on('data', (chunk: Buffer) => { err += chunk.toString('utf8') })
  await new Promise((resolve) => child.on('close', resolve))
  try {
    return JSON.parse(out) as { problems: LintProblem[] }
  } catch {
    throw new Error(`redocly printed no JSON report:\n${out}\n${err}`)
  }
}

function operations (document: Document): Array<{ method: string, path: string, operation: Operation }> {
  return Object.entries(document.paths).flatMap(([p, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method, path: p, operation })))
}

const anonymousAllowed = (operation: Operation): boolean => operation.security?.some((r) => Object.keys(r).length === 0) ?? false

t.test('the OpenAPI document of the whole platform is valid, lints clean and is complete', async (t) => {
  const { app } = await buildPlatform(t)
  const res = await app.inject({ url: '/docs/json' })
  t.equal(res.statusCode, 200)
  const document = res.json() as Document

  // swagger-parser dereferences the object it is given: a copy.
  await t.resolves(SwaggerParser.validate(structuredClone(document) as never), 'swagger-parser validates it')

  const dir = mkdtempSync(path.join(tmpdir(), 'esp-openapi-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = path.join(dir, 'openapi.json')
  writeFileSync(file, JSON.stringify(document, null, 2))
  const lint = await redoclyLint(file)
  const lintErrors = lint.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(' ')}`)
  t.same(lintErrors, [], 'redocly lint finds no error')

  const all = operations(document)
  t.ok(all.length > 80, `every route is in it (${all.length} operations)`)
  const ids = all.map(({ operation }) => operation.operationId)
  t.same(ids.filter((id, i) => id === undefined || ids.indexOf(id) !== i), [], 'every operation has an operationId of its own')
  for (const { method, path: p, operation } of all) {
    const name = `${method.toUpperCase()} ${p}`
    t.ok(Array.isArray(operation.security), `${name} declares its security`)
    for (const [status, given] of Object.entries(operation.responses)) {
      if (Number(status) < 400) continue
      const response = given.$ref === undefined ? given : document.components.responses?.[given.$ref.replace('#/components/responses/', '')]
      t.equal(response?.content?.['application/json']?.schema?.$ref, '#/components/schemas/ErrorBody', `${name} ${status}: the error body`)
      t.not(response?.description, 'Default Response', `${name} ${status}: described`)
    }
    for (const parameter of operation.parameters ?? []) {
      t.ok(parameter.schema?.type !== undefined || parameter.schema?.$ref !== undefined, `${name} ${parameter.name}: typed`)
    }
  }

  const find = (operationId: string): Operation => {
    const found = all.find(({ operation }) => operation.operationId === operationId)
    if (found === undefined) throw new Error(`no operation ${operationId}`)
    return found.operation
  }
  const parameter = (operationId: string, name: string): Record<string, unknown> | undefined =>
    find(operationId).parameters?.find((p) => p.name === name)?.schema
  t.same(find('getMe').security, [{ bearer: [] }, { basic: [] }, { accessToken: [] }, { sessionCookie: [] }], 'GET /me needs credentials, of any kind')
  t.ok(anonymousAllowed(find('listDevices')), 'lists are open to anonymous callers')
  t.same(find('oauthToken').security, [], 'the token endpoint reads client credentials itself')
  t.match(parameter('getReadings', 'rollup'), { type: 'string', pattern: String })
  t.match(parameter('getReadings', 'function'), { type: 'string', enum: ['avg', 'max', 'min', 'sum', 'count', 'dev', 'first', 'last'] })
  t.match(parameter('getReadings', 'device_id'), { type: 'integer', minimum: 1 })
  t.match(parameter('getReadings', 'all_intervals'), { type: 'boolean' })
  t.match(parameter('listDevices', 'per_page'), { type: 'integer', maximum: 1000 })
  t.match(parameter('exportReadings', 'format'), { enum: ['csv', 'ndjson', 'csv_wide', 'parquet'] })
  t.match(find('listDevices').parameters?.find((p) => p.name === 'q'), {
    style: 'deepObject',
    explode: true,
    schema: { type: 'object', properties: { created_at_lt: { type: 'string', format: 'date-time' }, name_cont: { type: 'string' }, id_in: { type: 'string' }, kit_id_gteq: { type: 'integer' } } }
  }, 'the q[<key>_<matcher>] filters, typed by key')
  t.match(parameter('getTag', 'id'), { type: 'string' }, 'tags are found by name too')
  t.same(Object.keys(find('exportReadings').responses['200']?.content ?? {}), ['text/csv', 'application/x-ndjson', 'application/vnd.apache.parquet'])
  t.same(Object.keys(find('downloadCsvArchive').responses['200']?.content ?? {}), ['text/csv'])
  t.same(Object.keys(find('getUpload').responses['200']?.content ?? {}), ['image/png', 'image/jpeg', 'image/gif', 'image/webp'])
  t.same(Object.keys(find('importReadingsCsv').requestBody?.content ?? {}), ['text/csv', 'multipart/form-data'])
  t.match(find('postUpload').requestBody?.content, { 'multipart/form-data': { schema: { properties: { file: { format: 'binary' } } } } })
  t.match(find('createSession').requestBody?.content, { 'application/json': {}, 'application/x-www-form-urlencoded': {} })
  for (const status of ['413', '415']) t.ok(find('importReadingsCsv').responses[status], `the CSV import documents ${status}`)
})

t.test('what the document says about credentials holds: anonymous callers get 401 exactly where it locks', async (t) => {
  const harness = await buildPlatform(t)
  const { app } = harness
  const owner = await signUp(app)
  const device = await makeDevice(harness.database, owner.id)
  const document = (await app.inject({ url: '/docs/json' })).json() as Document
  const checked = { locked: 0, open: 0 }
  for (const { method, path: p, operation } of operations(document)) {
    // Ids of a record that exists, so that a route finds its record before it asks who is calling.
    const url = p.replace(/\{(\w+)\}/g, (_m, name: string) => name === 'device_id' || (name === 'id' && p.startsWith('/v0/devices/')) ? String(device) : '1')
    // An empty body of the first media type the operation reads (a JSON one where it reads JSON).
    const media = Object.keys(operation.requestBody?.content ?? {})
    const body = media.length === 0 ? {} : media.includes('application/json') ? { payload: {} } : { payload: '', headers: { 'content-type': media[0] ?? '' } }
    const res = await app.inject({ method: method.toUpperCase() as 'GET', url, ...body })
    if (anonymousAllowed(operation)) {
      checked.open++
      t.not(res.statusCode, 401, `${method.toUpperCase()} ${p} is open: not a 401 (${res.body.slice(0, 120)})`)
    } else if (operation.security?.length !== 0) {
      checked.locked++
      t.equal(res.statusCode, 401, `${method.toUpperCase()} ${p} is locked: 401 for anonymous callers (${res.body.slice(0, 120)})`)
    }
  }
  t.ok(checked.locked > 30 && checked.open > 30, `both kinds were tried (${checked.locked} locked, ${checked.open} open)`)
  // A signed-in caller passes the lock of GET /me, as the docs page's Authorize button does it.
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(owner.token) })).statusCode, 200)
})
