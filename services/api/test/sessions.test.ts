import t from 'tap'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'

t.test('POST /sessions takes JSON, form fields or query, by username or e-mail', async (t) => {
  const { app } = await buildApi(t)
  const user = await signUp(app)
  const attempts = [
    { payload: { username: user.username, password: user.password } },
    { payload: `username=${user.username}&password=${encodeURIComponent(user.password)}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    { url: `/v0/sessions?username=${user.username}&password=${encodeURIComponent(user.password)}` },
    { payload: { username: user.email.toUpperCase(), password: user.password } }
  ]
  for (const attempt of attempts) {
    const res = await app.inject({ method: 'POST', url: '/v0/sessions', ...attempt })
    t.equal(res.statusCode, 200, JSON.stringify(attempt))
    t.match(res.json(), { access_token: String, token_type: 'Bearer', expires_in: 3600, user_id: user.id })
    const me = await app.inject({ url: '/v0/me', headers: bearer(res.json().access_token) })
    t.equal(me.json().id, user.id)
  }
})

t.test('failed logins say nothing about whether the account exists', async (t) => {
  const { app } = await buildApi(t)
  const user = await signUp(app)
  const wrong = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: 'not the password' } })
  const unknown = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: 'nobody-at-all', password: 'not the password' } })
  t.equal(wrong.statusCode, 422)
  t.same(wrong.json(), unknown.json())
  t.match(wrong.json(), { id: 'unprocessable_entity', errors: { password: ['is incorrect'] } })
  const missing = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username } })
  t.equal(missing.statusCode, 400)
  t.match(missing.json(), { id: 'parameter_missing', message: /password/ })
})

t.test('tokens work as Bearer, as access_token and through Basic; bad ones are 401 with the error body', async (t) => {
  const { app } = await buildApi(t)
  const user = await signUp(app)
  t.equal((await app.inject({ url: '/v0/me', headers: { authorization: `bearer ${user.token}` } })).statusCode, 200)
  t.equal((await app.inject({ url: `/v0/me?access_token=${user.token}` })).statusCode, 200)
  const basic = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`
  t.equal((await app.inject({ url: '/v0/me', headers: { authorization: basic } })).json().id, user.id)
  for (const headers of [
    { authorization: 'Bearer not-a-token' },
    { authorization: `Bearer ${user.token.slice(0, -2)}xx` },
    { authorization: `Basic ${Buffer.from(`${user.username}:wrong`).toString('base64')}` },
    { authorization: 'Basic !!!' }
  ]) {
    const res = await app.inject({ url: '/v0/me', headers })
    t.equal(res.statusCode, 401, headers.authorization)
    t.match(res.json(), { id: 'unauthorized', message: String, errors: null })
    t.ok(res.headers['www-authenticate'])
  }
  const param = await app.inject({ url: '/v0/me?access_token=forged' })
  t.equal(param.statusCode, 401)
  t.equal(param.json().message, 'Invalid OAuth2 Params')
  t.equal((await app.inject({ url: '/v0/me' })).statusCode, 401)
  t.equal((await app.inject({ url: '/v0/users', headers: { authorization: 'Bearer forged' } })).statusCode, 401, 'a bad token is refused even where anonymous access works')
})

t.test('changing the password revokes every token; expired tokens stop working', async (t) => {
  const { app, database } = await buildApi(t)
  const user = await signUp(app)
  const second = (await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: user.password } })).json().access_token
  const changed = await app.inject({ method: 'PATCH', url: '/v0/me', headers: bearer(user.token), payload: { password: 'a brand new secret' } })
  t.equal(changed.statusCode, 200)
  for (const token of [user.token, second]) t.equal((await app.inject({ url: '/v0/me', headers: bearer(token) })).statusCode, 401)
  const old = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: user.password } })
  t.equal(old.statusCode, 422)
  const fresh = (await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: user.username, password: 'a brand new secret' } })).json().access_token
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(fresh) })).statusCode, 200)
  // Edited behind the platform's back: like every change of credentials it bumps the auth
  // generation, or processes may trust what they remembered for up to the cache's TTL.
  await database.sql`update access_tokens set expires_at = now() - interval '1 second' where user_id = ${user.id}`
  await database.sql`update auth_generation set value = value + 1`
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(fresh) })).statusCode, 401)
})

t.test('secrets are stored hashed', async (t) => {
  const { app, database } = await buildApi(t)
  const user = await signUp(app)
  const [row] = await database.sql`select password_hash from users where id = ${user.id}`
  t.match(row?.password_hash, /^\$argon2id\$/)
  const tokens = await database.sql`select token_hash from access_tokens where user_id = ${user.id}`
  t.ok(tokens.length > 0)
  for (const token of tokens) {
    t.match(token.token_hash, /^[0-9a-f]{64}$/)
    t.not(token.token_hash, user.token)
  }
})

t.test('OAuth client applications and the password grant', async (t) => {
  const { app } = await buildApi(t)
  const user = await signUp(app)
  const other = await signUp(app)
  t.equal((await app.inject({ method: 'POST', url: '/v0/applications', payload: { name: 'x' } })).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url: '/v0/applications', headers: bearer(user.token), payload: { name: '' } })).statusCode, 422)
  const created = await app.inject({ method: 'POST', url: '/v0/applications', headers: bearer(user.token), payload: { name: 'My dashboard', redirect_uri: 'https://dash.example.org/cb' } })
  t.equal(created.statusCode, 201)
  const client = created.json()
  t.match(client, { name: 'My dashboard', uid: String, secret: String })
  const listed = (await app.inject({ url: '/v0/applications', headers: bearer(user.token) })).json()
  t.equal(listed.length, 1)
  t.equal(listed[0].secret, null, 'the secret is shown once')
  t.equal((await app.inject({ url: `/v0/applications/${client.id}`, headers: bearer(other.token) })).statusCode, 404, 'private to the owner')
  t.same((await app.inject({ url: '/v0/applications', headers: bearer(other.token) })).json(), [])

  const grant = { grant_type: 'password', username: user.username, password: user.password }
  const viaBody = await app.inject({ method: 'POST', url: '/oauth/token', payload: { ...grant, client_id: client.uid, client_secret: client.secret } })
  t.equal(viaBody.statusCode, 200)
  t.match(viaBody.json(), { access_token: String, token_type: 'Bearer', expires_in: 3600 })
  t.equal(viaBody.headers['cache-control'], 'no-store')
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(viaBody.json().access_token) })).json().id, user.id)
  const basic = `Basic ${Buffer.from(`${client.uid}:${client.secret}`).toString('base64')}`
  const viaBasic = await app.inject({ method: 'POST', url: '/v0/oauth/token', headers: { authorization: basic }, payload: grant })
  t.equal(viaBasic.statusCode, 200)
  const badClient = await app.inject({ method: 'POST', url: '/oauth/token', payload: { ...grant, client_id: client.uid, client_secret: 'nope' } })
  t.equal(badClient.statusCode, 401)
  t.match(badClient.json(), { id: 'invalid_client' })
  const badUser = await app.inject({ method: 'POST', url: '/oauth/token', payload: { ...grant, password: 'nope', client_id: client.uid, client_secret: client.secret } })
  t.equal(badUser.statusCode, 400)
  t.match(badUser.json(), { id: 'invalid_grant' })
  const badGrant = await app.inject({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'client_credentials', client_id: client.uid, client_secret: client.secret } })
  t.match(badGrant.json(), { id: 'unsupported_grant_type' })

  t.equal((await app.inject({ method: 'PATCH', url: `/v0/applications/${client.id}`, headers: bearer(user.token), payload: { name: 'Renamed' } })).json().name, 'Renamed')
  t.same((await app.inject({ method: 'DELETE', url: `/v0/applications/${client.id}`, headers: bearer(user.token) })).json(), { message: 'OK' })
  t.equal((await app.inject({ method: 'POST', url: '/oauth/token', payload: { ...grant, client_id: client.uid, client_secret: client.secret } })).statusCode, 401)
})

t.test('ADMIN_* creates the admin account at start, and makes an existing one admin', async (t) => {
  const first = await buildApi(t, { deps: { admin: { username: 'root-admin', email: 'root@example.org', password: 'a strong admin password' } } })
  const login = await first.app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: 'root-admin', password: 'a strong admin password' } })
  t.equal(login.statusCode, 200)
  const me = (await first.app.inject({ url: '/v0/me', headers: bearer(login.json().access_token) })).json()
  t.match(me, { role: 'admin', email: 'root@example.org', forwarding_token: String })
})
