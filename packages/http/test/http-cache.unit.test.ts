import t from 'tap'
import { buildServer } from '@esp/http'
import { testHttpOptions } from '@esp/test-helpers/server'

t.test('reads carry an ETag, answer 304 to a client that has them, and are cached publicly only when anonymous', async (t) => {
  const app = await buildServer(testHttpOptions)
  let version = 1
  app.get('/v0/thing', async () => ({ version }))
  app.get('/v0/own', async (_request, reply) => reply.header('cache-control', 'max-age=300, public').send({ own: true }))
  app.post('/v0/thing', async () => ({ posted: true }))
  app.get('/v0/missing', async (_request, reply) => reply.code(404).send({ id: 'not_found' }))
  await app.ready()
  t.teardown(async () => { await app.close() })

  const first = await app.inject({ url: '/v0/thing' })
  t.equal(first.statusCode, 200)
  const etag = first.headers.etag
  t.match(etag, /^W\/"[\w-]+"$/, 'a weak entity tag of the body')
  t.equal(first.headers['cache-control'], 'public, max-age=5', 'an anonymous answer may be kept briefly by a shared cache')
  t.match(first.headers.vary, /Authorization, Cookie/, 'but never handed to a caller with credentials (a token or the session cookie)')

  const again = await app.inject({ url: '/v0/thing', headers: { 'if-none-match': String(etag) } })
  t.equal(again.statusCode, 304, 'the client that has it gets 304')
  t.equal(again.body, '', 'without a body')
  t.equal(again.headers.etag, etag)
  t.equal((await app.inject({ url: '/v0/thing', headers: { 'if-none-match': `"other", ${String(etag).slice(2)}` } })).statusCode, 304, 'a strong form of the tag in a list matches too')

  version = 2
  const changed = await app.inject({ url: '/v0/thing', headers: { 'if-none-match': String(etag) } })
  t.equal(changed.statusCode, 200, 'a changed body is sent whole')
  t.not(changed.headers.etag, etag)

  const pretty = await app.inject({ url: '/v0/thing?pretty=true' })
  t.not(pretty.headers.etag, changed.headers.etag, 'the tag is of the body as sent (pretty differs)')

  const signedIn = await app.inject({ url: '/v0/thing', headers: { authorization: 'Bearer something' } })
  t.equal(signedIn.headers['cache-control'], 'private, max-age=0, must-revalidate', 'an answer to credentials is never kept by a shared cache')
  t.ok(signedIn.headers.etag !== undefined, 'and still has a tag for the client')
  t.equal((await app.inject({ url: '/v0/thing?access_token=x' })).headers['cache-control'], 'private, max-age=0, must-revalidate', 'a token in the query is a credential too')

  t.equal((await app.inject({ url: '/v0/own' })).headers['cache-control'], 'max-age=300, public', "a route's own Cache-Control stands")
  t.equal((await app.inject({ method: 'POST', url: '/v0/thing' })).headers.etag, undefined, 'writes are not tagged')
  t.equal((await app.inject({ url: '/v0/missing' })).headers.etag, undefined, 'nor errors')
  t.equal((await app.inject({ url: '/health/live' })).headers['cache-control'], 'no-store', 'health probes are never cached')
})
