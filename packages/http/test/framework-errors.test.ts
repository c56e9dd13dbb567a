import { connect } from 'node:net'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { buildServer } from '@esp/http'
import { testHttpOptions } from '@esp/test-helpers/server'

interface Tap { teardown: (fn: () => unknown) => void }

async function server (t: Tap): Promise<FastifyInstance> {
  const app = await buildServer(testHttpOptions)
  await app.register(async (v0) => {
    v0.get('/things/:id', async (request) => ({ id: (request.params as { id: string }).id }))
  }, { prefix: '/v0' })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { await app.close() })
  return app
}

/** What the server answers to raw bytes on a socket of its own: status line, headers, body. */
async function raw (app: FastifyInstance, request: string | Buffer): Promise<{ status: number, headers: string, body: string }> {
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (chunk) => chunks.push(chunk))
    socket.on('error', (err) => { if (chunks.length === 0) reject(err) })
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [head = '', body = ''] = text.split('\r\n\r\n', 2)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body })
    })
    socket.write(request)
    // Half-close, so a server that waits for more bytes answers what it has.
    setTimeout(() => { socket.end() }, 200)
  })
}

const shape = (body: string, id: string) => {
  const parsed = JSON.parse(body) as Record<string, unknown>
  return Object.keys(parsed).sort().join(',') === 'errors,id,message,url' && parsed.id === id && typeof parsed.message === 'string'
}

t.test('errors Fastify answers itself use the one error shape', async (t) => {
  const app = await server(t)
  const long = await app.inject({ url: `/v0/things/${'a'.repeat(600)}` })
  t.equal(long.statusCode, 414, 'a path segment over maxParamLength')
  t.match(long.headers['content-type'], /^application\/json/)
  t.same(Object.keys(long.json()).sort(), ['errors', 'id', 'message', 'url'])
  t.match(long.json(), { id: 'uri_too_long', errors: null, url: null })
  t.match(long.headers['x-request-id'], /^[\w-]+$/, 'the request id is handed back')

  const bad = await app.inject({ url: '/v0/things/%zz' })
  t.equal(bad.statusCode, 400, 'a malformed percent-encoding in the path')
  t.match(bad.json(), { id: 'bad_request', errors: null, url: null })
  t.same(Object.keys(bad.json()).sort(), ['errors', 'id', 'message', 'url'])

  const fine = await app.inject({ url: `/v0/things/${'a'.repeat(500)}` })
  t.equal(fine.statusCode, 200, '500 characters are within the limit')
})

t.test('malformed HTTP and oversized headers on the socket use the one error shape', async (t) => {
  const app = await server(t)
  const overflow = await raw(app, `GET /v0/things/1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
  t.equal(overflow.status, 431, 'headers over the limit')
  t.ok(shape(overflow.body, 'request_header_fields_too_large'), overflow.body)
  t.match(overflow.headers, /content-type: application\/json/i)

  const longUrl = await raw(app, `GET /v0/things/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`)
  t.equal(longUrl.status, 431, 'a request line over the header limit')
  t.ok(shape(longUrl.body, 'request_header_fields_too_large'), longUrl.body)

  const garbage = await raw(app, 'NOT HTTP AT ALL\r\n\r\n')
  t.equal(garbage.status, 400, 'not HTTP')
  t.ok(shape(garbage.body, 'bad_request'), garbage.body)

  const badHeader = await raw(app, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n')
  t.equal(badHeader.status, 400, 'a malformed header line')
  t.ok(shape(badHeader.body, 'bad_request'), badHeader.body)

  const smuggled = await raw(app, 'GET /v0/things/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n')
  t.equal(smuggled.status, 400, 'Content-Length with Transfer-Encoding')
  t.ok(shape(smuggled.body, 'bad_request'), smuggled.body)

  const noHost = await raw(app, 'GET /v0/things/1 HTTP/1.1\r\n\r\n')
  t.equal(noHost.status, 400, 'HTTP/1.1 without Host')
  t.ok(shape(noHost.body, 'bad_request'), noHost.body)
  t.match(noHost.headers, /x-request-id: /i)

  const oldHttp = await raw(app, 'GET /v0/things/1 HTTP/1.0\r\n\r\n')
  t.equal(oldHttp.status, 200, 'HTTP/1.0 needs no Host')

  const expect = await raw(app, 'GET /v0/things/1 HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\n\r\n')
  t.equal(expect.status, 417, 'an Expect other than 100-continue')
  t.ok(shape(expect.body, 'expectation_failed'), expect.body)
})
