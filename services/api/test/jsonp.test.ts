import t from 'tap'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'

t.test('JSON-P is answered to anonymous requests only: a caller\'s private data is never wrapped in a script', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const user = await signUp(app)
  const basic = { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` }

  t.equal((await app.inject({ url: '/v0/me', headers: basic })).json().email, user.email, 'without a callback, /me shows the e-mail')
  const withCredentials = [
    { name: 'Basic credentials', url: '/v0/me?callback=x', headers: basic },
    { name: 'a bearer token', url: '/v0/me?callback=x', headers: bearer(user.token) },
    { name: 'any Authorization header', url: '/v0/me?callback=x', headers: { authorization: 'Token abc' } },
    { name: 'an access_token parameter', url: `/v0/me?callback=x&access_token=${user.token}`, headers: {} },
    { name: 'a bearer_token parameter', url: `/v0/me?bearer_token=${user.token}&callback=x`, headers: {} },
    { name: 'an access_token parameter with an encoded name', url: `/v0/me?callback=x&access%5Ftoken=${user.token}`, headers: {} },
    { name: 'credentials on a public route', url: '/v0/devices?callback=x', headers: basic }
  ]
  for (const c of withCredentials) {
    const res = await app.inject({ url: c.url, headers: c.headers })
    t.equal(res.statusCode, 400, `${c.name}: 400`)
    t.match(res.headers['content-type'], /^application\/json/, `${c.name}: JSON, not a script`)
    t.match(res.json(), { id: 'bad_request', errors: { callback: ['cannot be combined with credentials'] }, url: null })
    t.notOk(res.body.includes(user.email), `${c.name}: no e-mail`)
  }

  const anonymousMe = await app.inject({ url: '/v0/me?callback=x' })
  t.equal(anonymousMe.statusCode, 401, 'anonymous /me is still a 401')
  t.notOk(anonymousMe.body.includes(user.email))

  const root = await app.inject({ url: '/v0/?callback=handle' })
  t.equal(root.statusCode, 200, 'the older form keeps JSON-P for anonymous GETs')
  t.equal(root.headers['content-type'], 'application/javascript; charset=utf-8')
  t.match(root.body, /^\/\*\*\/handle\(\{/)
  const users = await app.inject({ url: `/v0/users/${user.id}?callback=cb.done` })
  t.equal(users.statusCode, 200)
  t.match(users.body, /^\/\*\*\/cb\.done\(/)
  t.notOk(users.body.includes(user.email), 'an anonymous answer holds no e-mail')
  const post = await app.inject({ method: 'POST', url: '/v0/sessions?callback=x', payload: { username: user.username, password: user.password } })
  t.equal(post.statusCode, 200, 'callback applies to GET only: a POST is not refused for it')
  t.match(post.headers['content-type'], /^application\/json/)
})
