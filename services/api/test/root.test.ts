import t from 'tap'
import { buildApi } from '@esp/test-helpers/api'

const links = ['api_documentation_url', 'current_user_url', 'components_url', 'devices_url', 'kits_url', 'measurements_url',
  'sensors_url', 'users_url', 'tags_url', 'tags_sensors_url', 'experiments_url', 'search_url']

t.test('GET /v0/ lists every link of the newer and older forms', async (t) => {
  const { app } = await buildApi(t)
  const res = await app.inject({ url: '/v0/', headers: { host: 'api.example.org' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'max-age=300, public')
  const body = res.json()
  t.type(body.notice, 'string')
  t.equal(body.version_git, 'test-version')
  for (const key of links) t.match(body[key], /^http:\/\/api\.example\.org\//, key)
  t.equal(body.api_documentation_url, 'http://api.example.org/docs')
  t.equal(body.current_user_url, 'http://api.example.org/v0/me')
  t.equal(body.tags_sensors_url, 'http://api.example.org/v0/tag_sensors')
})

t.test('the root answers without a version and with the Accept header', async (t) => {
  const { app } = await buildApi(t)
  const plain = await app.inject({ url: '/' })
  const byHeader = await app.inject({ url: '/', headers: { accept: 'application/vnd.smartcitizen; version=0,application/json' } })
  t.equal(plain.statusCode, 200)
  t.same(plain.json(), byHeader.json())
})

t.test('PUBLIC_URL replaces the request host in links', async (t) => {
  const { app } = await buildApi(t, { server: { publicUrl: 'https://sensors.example.net' } })
  const body = (await app.inject({ url: '/v0/' })).json()
  t.equal(body.devices_url, 'https://sensors.example.net/v0/devices')
})

t.test('the OpenAPI document covers the api routes', async (t) => {
  const { app } = await buildApi(t)
  const doc = await app.inject({ url: '/docs/json' })
  t.equal(doc.statusCode, 200)
  const paths = Object.keys(doc.json().paths)
  for (const path of ['/v0', '/v0/users', '/v0/me', '/v0/sessions', '/v0/password_resets', '/v0/oauth/token']) t.ok(paths.includes(path), path)
})
