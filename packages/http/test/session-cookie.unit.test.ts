import t from 'tap'
import { buildServer, cookieValue, fromTrustedOrigin, originOf } from '@esp/http'
import { testHttpOptions } from '@esp/test-helpers/server'

t.test('origins are compared as browsers write them', async (t) => {
  t.equal(originOf('https://Web.Example.org:443'), 'https://web.example.org', 'lower-case host, no default port')
  t.equal(originOf('http://localhost:3000/explorer/?x=1'), 'http://localhost:3000', 'a Referer gives its origin')
  t.equal(originOf('null'), null, 'Origin: null names none')
  t.equal(originOf('file:///etc/passwd'), null, 'an opaque origin names none')
  t.equal(originOf('not a url'), null)
})

t.test('cookie values: by exact name, the first one, spaces trimmed', async (t) => {
  const header = 'a_esp_session=x; esp_session=first ;esp_session=second; other=1'
  t.equal(cookieValue(header, 'esp_session'), 'first')
  t.equal(cookieValue(header, 'session'), undefined)
  t.equal(cookieValue(undefined, 'esp_session'), undefined)
  t.equal(cookieValue('esp_session=', 'esp_session'), '')
})

t.test('a configured web origin is trusted as browsers send it, with credentials and for writes', async (t) => {
  const app = await buildServer({ ...testHttpOptions, credentialedOrigins: ['https://Web.Example.org:443'] })
  app.post('/v0/probe', async (request) => ({ trusted: fromTrustedOrigin(request) }))
  t.teardown(async () => { await app.close() })
  const trusted = await app.inject({ url: '/health/live', headers: { origin: 'https://web.example.org' } })
  t.equal(trusted.headers['access-control-allow-origin'], 'https://web.example.org')
  t.equal(trusted.headers['access-control-allow-credentials'], 'true')
  const probe = async (headers: Record<string, string>): Promise<boolean> => (await app.inject({ method: 'POST', url: '/v0/probe', headers })).json().trusted
  t.equal(await probe({ origin: 'https://web.example.org' }), true, 'the web origin')
  t.equal(await probe({ referer: 'https://web.example.org/kits/1' }), true, 'its Referer, without an Origin')
  t.equal(await probe({ origin: 'http://localhost' }), true, 'the API\'s own origin (Host: localhost:80)')
  t.equal(await probe({ origin: 'http://localhost:8080' }), false, 'another port is another origin')
  t.equal(await probe({ origin: 'https://evil.example.net', referer: 'https://web.example.org/' }), false, 'the Origin decides when there is one')
  t.equal(await probe({}), false, 'neither header: not a page of a trusted origin')
})
