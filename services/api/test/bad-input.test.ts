import t from 'tap'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'

t.test('bad input to every users and authentication route: a 4xx with the error body, nothing written', async (t) => {
  const harness = await buildApi(t)
  const { app, database } = harness
  const user = await signUp(app)
  const counts = async () => (await database.sql`
    select (select count(*) from users)::int as users, (select count(*) from access_tokens)::int as tokens,
           (select count(*) from oauth_applications)::int as apps, (select count(*) from password_resets)::int as resets,
           (select max(updated_at) from users) as touched`)[0]
  const before = await counts()
  const auth = bearer(user.token)
  const json = { 'content-type': 'application/json' }
  const cases: { name: string, method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, headers?: Record<string, string>, payload?: string | object, status: number }[] = [
    { name: 'malformed JSON to POST /users', method: 'POST', url: '/v0/users', headers: json, payload: '{"username":"x",', status: 400 },
    { name: 'an array body to POST /users', method: 'POST', url: '/v0/users', headers: json, payload: '[1,2]', status: 422 },
    { name: 'object-valued fields', method: 'POST', url: '/v0/users', payload: { username: ['a'], email: { x: 1 }, password: 'long enough 1' }, status: 422 },
    { name: 'a huge body', method: 'POST', url: '/v0/users', headers: json, payload: JSON.stringify({ username: 'x'.repeat(2 * 1024 * 1024) }), status: 413 },
    { name: 'malformed JSON to PATCH /me', method: 'PATCH', url: '/v0/me', headers: { ...auth, ...json }, payload: '{city:', status: 400 },
    { name: 'wrong types to PATCH /me', method: 'PATCH', url: '/v0/me', headers: auth, payload: { city: { nested: true } }, status: 422 },
    { name: 'a hostile e-mail to PATCH /me', method: 'PATCH', url: '/v0/me', headers: auth, payload: { email: "x'); drop table users; --" }, status: 422 },
    { name: 'a too long city', method: 'PATCH', url: '/v0/me', headers: auth, payload: { city: 'c'.repeat(300) }, status: 422 },
    { name: 'malformed JSON to POST /sessions', method: 'POST', url: '/v0/sessions', headers: json, payload: 'nope', status: 400 },
    { name: 'non-string credentials', method: 'POST', url: '/v0/sessions', payload: { username: { $gt: '' }, password: 'x' }, status: 422 },
    { name: 'a very long password', method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: 'p'.repeat(60_000) }, status: 422 },
    { name: 'a password past the body limit', method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: 'p'.repeat(100_000) }, status: 413 },
    { name: 'an unknown user id', method: 'GET', url: '/v0/users/2147483647', status: 404 },
    { name: 'an out-of-range user id', method: 'GET', url: '/v0/users/99999999999999999999', status: 404 },
    // Application ids parse as every record id does (recordIdParam): one that is none is a 404.
    { name: 'a non-numeric application id', method: 'GET', url: '/v0/applications/abc', headers: auth, status: 404 },
    { name: 'an out-of-range application id', method: 'DELETE', url: '/v0/applications/9999999999', headers: auth, status: 404 },
    { name: 'Infinity as an application id', method: 'GET', url: '/v0/applications/Infinity', headers: auth, status: 404 },
    { name: 'Infinity as an application id to delete', method: 'DELETE', url: '/v0/applications/Infinity', headers: auth, status: 404 },
    { name: 'an exponent as an application id', method: 'PATCH', url: '/v0/applications/1e3', headers: auth, payload: { name: 'x' }, status: 404 },
    { name: 'an application without a name', method: 'POST', url: '/v0/applications', headers: auth, payload: { redirect_uri: 'javascript:alert(1)' }, status: 422 },
    { name: 'a bad avatar filename type', method: 'PATCH', url: '/v0/me/avatar', headers: auth, payload: { filename: { a: 1 } }, status: 422 },
    { name: 'an upload without multipart', method: 'POST', url: '/v0/uploads', headers: json, payload: '{}', status: 400 },
    { name: 'an upload with no policy', method: 'POST', url: '/v0/uploads', headers: { 'content-type': 'multipart/form-data; boundary=x' }, payload: '--x\r\nContent-Disposition: form-data; name="key"\r\n\r\nk\r\n--x--\r\n', status: 400 },
    { name: 'a reset with an object identifier', method: 'POST', url: '/v0/password_resets', payload: { email_or_username: { a: 1 } }, status: 422 },
    { name: 'a too long reset code', method: 'GET', url: `/v0/password_resets/${'a'.repeat(500)}`, status: 400 },
    { name: 'an unsupported body type', method: 'POST', url: '/v0/users', headers: { 'content-type': 'text/xml' }, payload: '<user/>', status: 415 },
    { name: 'a bad filter value', method: 'GET', url: '/v0/users?q[created_at_gt]=%00', status: 400 },
    { name: 'a NUL in a username lookup', method: 'GET', url: '/v0/users/abc%00def', status: 400 },
    { name: 'a NUL in a JSON body', method: 'POST', url: '/v0/sessions', headers: json, payload: '{"username":"a\\u0000b","password":"x"}', status: 400 }
  ]
  for (const c of cases) {
    const res = await app.inject({ method: c.method, url: c.url, ...(c.headers !== undefined ? { headers: c.headers } : {}), ...(c.payload !== undefined ? { payload: c.payload } : {}) })
    t.equal(res.statusCode, c.status, c.name)
    t.match(res.json(), { id: String, message: String }, `${c.name}: error body`)
  }
  t.same(await counts(), before, 'nothing was written')
})
