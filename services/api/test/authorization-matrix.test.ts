import t from 'tap'
import { bearer, buildApi, signUp, signUpAs } from '../../../test/helpers/api.js'

type Actor = 'anonymous' | 'other' | 'self' | 'researcher' | 'admin'
const ACTORS: Actor[] = ['anonymous', 'other', 'self', 'researcher', 'admin']

t.test('authorisation matrix for every users and authentication route', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const tokens: Record<Actor, string | undefined> = { anonymous: undefined, other: undefined, self: undefined, researcher: undefined, admin: undefined }
  const fresh = async () => await signUp(app)
  const self = await fresh()
  tokens.self = self.token
  tokens.other = (await fresh()).token
  tokens.researcher = (await signUpAs(harness, 'researcher')).token
  tokens.admin = (await signUpAs(harness, 'admin')).token
  const headers = (actor: Actor) => tokens[actor] === undefined ? {} : bearer(tokens[actor] ?? '')

  interface Row { name: string, expect: Record<Actor, number>, request: (actor: Actor) => Promise<{ method: string, url: string, payload?: unknown }> }
  const all = (status: number): Record<Actor, number> => ({ anonymous: status, other: status, self: status, researcher: status, admin: status })
  const signedIn = (status: number): Record<Actor, number> => ({ anonymous: 401, other: status, self: status, researcher: status, admin: status })
  const selfOrAdmin = { anonymous: 401, other: 403, self: 200, researcher: 403, admin: 200 }
  const rows: Row[] = [
    { name: 'GET /users', expect: all(200), request: async () => ({ method: 'GET', url: '/v0/users' }) },
    { name: 'GET /users/:id', expect: all(200), request: async () => ({ method: 'GET', url: `/v0/users/${self.id}` }) },
    { name: 'POST /users', expect: all(201), request: async (actor) => ({ method: 'POST', url: '/v0/users', payload: { username: `new-${actor}`, email: `new-${actor}@example.org`, password: 'long enough 1' } }) },
    { name: 'PATCH /users/:id', expect: selfOrAdmin, request: async () => ({ method: 'PATCH', url: `/v0/users/${self.id}`, payload: { city: 'Oslo' } }) },
    { name: 'PUT /users/:id', expect: selfOrAdmin, request: async () => ({ method: 'PUT', url: `/v0/users/${self.username}`, payload: { city: 'Oslo' } }) },
    { name: 'GET /me', expect: signedIn(200), request: async () => ({ method: 'GET', url: '/v0/me' }) },
    { name: 'PATCH /me', expect: signedIn(200), request: async () => ({ method: 'PATCH', url: '/v0/me', payload: { url: 'https://example.org' } }) },
    { name: 'PUT /me', expect: signedIn(200), request: async () => ({ method: 'PUT', url: '/v0/me', payload: { url: 'https://example.org' } }) },
    { name: 'PATCH /me/avatar', expect: signedIn(200), request: async () => ({ method: 'PATCH', url: '/v0/me/avatar', payload: { filename: 'a.png' } }) },
    { name: 'POST /sessions', expect: all(200), request: async () => ({ method: 'POST', url: '/v0/sessions', payload: { username: self.username, password: self.password } }) },
    { name: 'POST /password_resets', expect: all(200), request: async () => ({ method: 'POST', url: '/v0/password_resets', payload: { email_or_username: self.email } }) },
    { name: 'GET /password_resets/:token', expect: all(404), request: async () => ({ method: 'GET', url: '/v0/password_resets/not-a-code' }) },
    { name: 'PATCH /password_resets/:token', expect: all(404), request: async () => ({ method: 'PATCH', url: '/v0/password_resets/not-a-code', payload: { password: 'long enough 1' } }) },
    { name: 'GET /applications', expect: signedIn(200), request: async () => ({ method: 'GET', url: '/v0/applications' }) },
    { name: 'POST /applications', expect: signedIn(201), request: async () => ({ method: 'POST', url: '/v0/applications', payload: { name: 'app' } }) }
  ]
  for (const row of rows) {
    for (const actor of ACTORS) {
      const { method, url, payload } = await row.request(actor)
      const res = await app.inject({ method: method as 'GET', url, headers: headers(actor), ...(payload === undefined ? {} : { payload: payload as object }) })
      t.equal(res.statusCode, row.expect[actor], `${row.name} as ${actor}`)
      if (res.statusCode >= 400) t.match(res.json(), { id: String, message: String }, `${row.name} as ${actor}: error body`)
    }
  }

  // DELETE needs a fresh target per actor.
  const deleteExpect: Record<Actor, number> = { anonymous: 401, other: 403, self: 200, researcher: 403, admin: 200 }
  for (const actor of ACTORS) {
    const target = await fresh()
    const token = actor === 'self' ? target.token : tokens[actor]
    const res = await app.inject({ method: 'DELETE', url: `/v0/users/${target.id}`, headers: token === undefined ? {} : bearer(token) })
    t.equal(res.statusCode, deleteExpect[actor], `DELETE /users/:id as ${actor}`)
  }
  for (const actor of ACTORS) {
    const target = await fresh()
    const token = actor === 'anonymous' ? undefined : target.token
    t.equal((await app.inject({ method: 'DELETE', url: '/v0/me', headers: token === undefined ? {} : bearer(token) })).statusCode, actor === 'anonymous' ? 401 : 200, `DELETE /me as ${actor}`)
  }
})

t.test('who sees which fields of a user', async (t) => {
  const harness = await buildApi(t)
  const { app } = harness
  const self = await signUpAs(harness, 'researcher')
  const other = await signUp(app)
  const admin = await signUpAs(harness, 'admin')
  const view = async (token?: string) => (await app.inject({ url: `/v0/users/${self.id}`, headers: token === undefined ? {} : bearer(token) })).json()
  const expectations: [string, string | undefined, { email: boolean, keys: boolean, forwarding: boolean }][] = [
    ['anonymous', undefined, { email: false, keys: false, forwarding: false }],
    ['another citizen', other.token, { email: false, keys: false, forwarding: false }],
    ['the user', self.token, { email: true, keys: true, forwarding: true }],
    ['an admin', admin.token, { email: true, keys: true, forwarding: false }]
  ]
  for (const [who, token, sees] of expectations) {
    const user = await view(token)
    t.equal(user.email === '[FILTERED]', !sees.email, `${who}: email`)
    t.equal(user.legacy_api_key === '[FILTERED]', !sees.keys, `${who}: legacy_api_key`)
    t.equal(user.forwarding_token === '[FILTERED]', !sees.forwarding, `${who}: forwarding_token`)
    t.equal(user.forwarding_username === '[FILTERED]', !sees.forwarding, `${who}: forwarding_username`)
  }
})

t.test('secrets never reach the log', async (t) => {
  const lines: string[] = []
  const harness = await buildApi(t, { server: { logLevel: 'debug', logStream: { write: (line: string) => { lines.push(line) } } } })
  const { app } = harness
  const user = await signUp(app, { password: 'a password to hide' })
  await app.inject({ url: `/v0/me?access_token=${user.token}` })
  await app.inject({ url: '/v0/me', headers: bearer(user.token) })
  await app.inject({ url: '/v0/me', headers: { authorization: `Basic ${Buffer.from(`${user.username}:a password to hide`).toString('base64')}` } })
  await app.inject({ method: 'POST', url: `/v0/sessions?username=${user.username}&password=a%20password%20to%20hide` })
  const log = lines.join('')
  t.ok(log.includes('incoming request'), 'requests are logged')
  t.notOk(log.includes(user.token), 'no access token in the log')
  t.notOk(log.includes('a password to hide') || log.includes('a%20password%20to%20hide'), 'no password in the log')
  t.match(log, /access_token=\[REDACTED\]/)
})
