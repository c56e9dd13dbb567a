import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { Type } from '@sinclair/typebox'
import { errors } from '@esp/domain'
import { buildServer, errorResponses } from '@esp/http'
import { testHttpOptions } from '@esp/test-helpers/server'

interface Tap { teardown: (fn: () => unknown) => void }

const Thing = Type.Object({ name: Type.String({ minLength: 1 }), size: Type.Integer({ minimum: 0 }) })

async function server (t: Tap): Promise<FastifyInstance> {
  const app = await buildServer({ ...testHttpOptions, bodyLimit: 2048 })
  await app.register(async (v0) => {
    v0.post('/things', {
      schema: { body: Thing, response: { 201: Thing, ...errorResponses(400, 422) } }
    }, async (request, reply) => reply.code(201).send(request.body))
    v0.get('/things', {
      schema: { querystring: Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1 })) }) }
    }, async () => [{ text: 'line\u2028separator' }])
    v0.get('/teapot', async () => { throw errors.enhanceYourCalm('slow down') })
    v0.get('/boom', async () => { throw new Error('secret internals: password=hunter2') })
  }, { prefix: '/v0' })
  await app.ready()
  t.teardown(async () => { await app.close() })
  return app
}

const errorShape = { id: String, message: String }

t.test('an unknown route is a 404 with the error body', async (t) => {
  const app = await server(t)
  const res = await app.inject({ url: '/v0/nowhere' })
  t.equal(res.statusCode, 404)
  t.match(res.headers['content-type'], /application\/json/)
  t.same(Object.keys(res.json()).sort(), ['errors', 'id', 'message', 'url'])
  t.match(res.json(), { id: 'not_found', errors: null, url: null })
})

t.test('a malformed JSON body is a 400 with the error body, and the handler never runs', async (t) => {
  const app = await server(t)
  for (const payload of ['{bad', '{"name": "x",}', '', '\u0000']) {
    const res = await app.inject({ method: 'POST', url: '/v0/things', headers: { 'content-type': 'application/json' }, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(res.json(), { id: 'bad_request', message: /JSON/, errors: null })
  }
})

t.test('a body that fails validation names each failing field', async (t) => {
  const app = await server(t)
  const res = await app.inject({ method: 'POST', url: '/v0/things', payload: { name: '', size: 'big' } })
  t.equal(res.statusCode, 422)
  t.match(res.json(), { id: 'unprocessable_entity', errors: { name: [String], size: [String] } })
  const missing = await app.inject({ method: 'POST', url: '/v0/things', payload: {} })
  t.same(missing.json().errors, { name: ["can't be blank"], size: ["can't be blank"] })
})

t.test('a bad query parameter is a 400 naming it', async (t) => {
  const app = await server(t)
  const res = await app.inject({ url: '/v0/things?page=zero' })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { id: 'bad_request', errors: { page: [String] } })
})

t.test('form-encoded bodies are accepted like JSON', async (t) => {
  const app = await server(t)
  const res = await app.inject({ method: 'POST', url: '/v0/things', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=lamp&size=3' })
  t.equal(res.statusCode, 201)
  t.same(res.json(), { name: 'lamp', size: 3 })
})

t.test('too large and unsupported bodies get 413 and 415', async (t) => {
  const app = await server(t)
  const large = await app.inject({ method: 'POST', url: '/v0/things', payload: { name: 'x'.repeat(5000), size: 1 } })
  t.equal(large.statusCode, 413)
  t.match(large.json(), { id: 'payload_too_large' })
  const xml = await app.inject({ method: 'POST', url: '/v0/things', headers: { 'content-type': 'application/xml' }, payload: '<a/>' })
  t.equal(xml.statusCode, 415)
  t.match(xml.json(), errorShape)
})

t.test('domain errors keep their status and id; unexpected ones become a generic 500', async (t) => {
  const app = await server(t)
  const calm = await app.inject({ url: '/v0/teapot' })
  t.equal(calm.statusCode, 420)
  t.same(calm.json(), { id: 'enhance_your_calm', message: 'slow down', errors: null, url: null })
  const boom = await app.inject({ url: '/v0/boom' })
  t.equal(boom.statusCode, 500)
  t.same(boom.json(), { id: 'internal_server_error', message: 'Internal Server Error', errors: null, url: null })
  t.notMatch(boom.body, /hunter2|internals/)
})

t.test('pretty=true indents', async (t) => {
  const app = await server(t)
  const res = await app.inject({ url: '/v0/things?pretty=true' })
  t.match(res.body, /^\[\n {2}\{\n {4}"text"/)
  const plain = await app.inject({ url: '/v0/things' })
  t.notMatch(plain.body, /\n/)
})

t.test('JSON-P wraps GET responses safely and refuses anything but an identifier path', async (t) => {
  const app = await server(t)
  const ok = await app.inject({ url: '/v0/things?callback=window.cb_1' })
  t.equal(ok.statusCode, 200)
  t.match(ok.headers['content-type'], /^application\/javascript/)
  t.equal(ok.headers['x-content-type-options'], 'nosniff')
  t.equal(ok.body, '/**/window.cb_1([{"text":"line\\u2028separator"}])')
  for (const callback of ['alert(1)', '<script>', 'a..b', '1abc', 'a;b', 'x'.repeat(200), 'a%0Ab']) {
    const res = await app.inject({ url: `/v0/things?callback=${encodeURIComponent(callback)}` })
    t.equal(res.statusCode, 400, callback)
    t.match(res.headers['content-type'], /application\/json/)
    t.match(res.json(), { id: 'bad_request', errors: { callback: ['is invalid'] } })
  }
  const post = await app.inject({ method: 'POST', url: '/v0/things?callback=cb', payload: { name: 'a', size: 1 } })
  t.match(post.headers['content-type'], /application\/json/, 'JSON-P is for GET only')
})

t.test('versions by path, by no version and by the Accept header reach the same route', async (t) => {
  const app = await server(t)
  for (const request of [
    { url: '/v0/things' },
    { url: '/things' },
    { url: '/things/' },
    { url: '//things' },
    { url: '/things.json' },
    { url: '/things', headers: { accept: 'application/vnd.smartcitizen; version=0,application/json' } }
  ]) {
    const res = await app.inject(request)
    t.equal(res.statusCode, 200, JSON.stringify(request))
  }
  const v1 = await app.inject({ url: '/things', headers: { accept: 'application/vnd.smartcitizen; version=1' } })
  t.equal(v1.statusCode, 404)
  t.match(v1.json(), { id: 'not_found' })
})

t.test('CORS: preflight and simple requests', async (t) => {
  const app = await server(t)
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/v0/things',
    headers: { origin: 'https://example.org', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], '*')
  t.match(preflight.headers['access-control-allow-methods'], /PATCH/)
  t.match(String(preflight.headers['access-control-allow-headers']), /Authorization/)
  t.equal(preflight.headers['access-control-max-age'], '2592000')
  const simple = await app.inject({ url: '/v0/things', headers: { origin: 'https://example.org' } })
  t.equal(simple.headers['access-control-allow-origin'], '*')
  t.match(String(simple.headers['access-control-expose-headers']), /Link/)
})

t.test('OpenAPI document and its interactive page', async (t) => {
  const app = await server(t)
  const doc = await app.inject({ url: '/docs/json' })
  t.equal(doc.statusCode, 200)
  t.equal(doc.json().openapi, '3.0.3')
  t.ok(doc.json().paths['/v0/things'], 'routes appear in the document')
  const page = await app.inject({ url: '/docs/' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /text\/html/)
})

t.test('health routes', async (t) => {
  const app = await server(t)
  t.same((await app.inject({ url: '/health/live' })).json(), { status: 'live' })
  t.same((await app.inject({ url: '/health/ready' })).json(), { status: 'ready' })
  const down = await buildServer({ ...testHttpOptions, ready: async () => 'database not migrated: 0 of 1 migrations applied' })
  t.teardown(async () => { await down.close() })
  const res = await down.inject({ url: '/health/ready' })
  t.equal(res.statusCode, 503)
  t.match(res.json(), { id: 'service_unavailable', message: /not migrated/ })
})

t.test('CORS: configured web origins get credentials, others get *', async (t) => {
  const app = await buildServer({ ...testHttpOptions, credentialedOrigins: ['https://web.example.org'] })
  t.teardown(async () => { await app.close() })
  const trusted = await app.inject({ url: '/health/live', headers: { origin: 'https://web.example.org' } })
  t.equal(trusted.headers['access-control-allow-origin'], 'https://web.example.org')
  t.equal(trusted.headers['access-control-allow-credentials'], 'true')
  const other = await app.inject({ url: '/health/live', headers: { origin: 'https://evil.example.com' } })
  t.equal(other.headers['access-control-allow-origin'], '*')
  t.equal(other.headers['access-control-allow-credentials'], undefined)
})
