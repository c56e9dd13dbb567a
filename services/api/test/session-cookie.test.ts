import t from 'tap'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { ThrottleSettings } from '@esp/domain'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'

/**
 * clients.md §4 rule 10: the current web authenticates with a session cookie (withCredentials, no
 * token). The cookie is the access token of the log-in, so it is checked, throttled, expired and
 * revoked as a Bearer token is; being ambient, it must not let another page write (CSRF).
 */
const WEB = 'https://web.example.org'
const FOREIGN = 'https://evil.example.net'
/** Of the same site as a web on example.org: SameSite=Lax would let it send the cookie. */
const SIBLING = 'https://blog.example.org'
/** The API's own origin under inject (Host: localhost:80). */
const OWN = 'http://localhost'

type User = Awaited<ReturnType<typeof signUp>>

const setCookies = (res: LightMyRequestResponse): string[] => {
  const header = res.headers['set-cookie']
  return header === undefined ? [] : [header].flat()
}
const sessionSetCookie = (res: LightMyRequestResponse, name = 'esp_session'): string | undefined => setCookies(res).find((c) => c.startsWith(`${name}=`))

/** Logs in as the web does (JSON body, from its origin); the Cookie header the browser then sends. */
async function webLogin (app: FastifyInstance, user: User, headers: Record<string, string> = { origin: WEB }): Promise<{ res: LightMyRequestResponse, cookie: string }> {
  const res = await app.inject({ method: 'POST', url: '/v0/sessions', headers, payload: { username: user.username, password: user.password } })
  const cookie = setCookies(res).map((c) => c.split(';')[0] ?? '').join('; ')
  return { res, cookie }
}

const sessionCookie = (token: string): Record<string, string> => ({ cookie: `esp_session=${token}` })

t.test('a log-in from the web origin sets the session cookie; /me answers from it alone', async (t) => {
  const { app } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const user = await signUp(app)
  const { res, cookie } = await webLogin(app, user)
  t.equal(res.statusCode, 200)
  const token = res.json().access_token as string
  t.equal(sessionSetCookie(res), `esp_session=${token}; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax`, 'the access token, HttpOnly, for as long as it lives; not Secure over http')
  t.ok(setCookies(res).some((c) => c.startsWith(`esp_device_${user.id}=`)), 'the device cookie is still set')

  const me = await app.inject({ url: '/v0/me', headers: { cookie } })
  t.equal(me.statusCode, 200, 'GET /me with the cookies only')
  t.match(me.json(), { id: user.id, username: user.username })
  const key: unknown = me.json().legacy_api_key
  t.ok(typeof key === 'string' && key !== '' && key !== '[FILTERED]', 'isAuth: a non-empty legacy_api_key')
  t.match(me.headers['cache-control'], /private/, 'an answer for the cookie\'s user is private')

  const cors = await app.inject({ url: '/v0/me', headers: { cookie, origin: WEB } })
  t.equal(cors.statusCode, 200)
  t.equal(cors.headers['access-control-allow-origin'], WEB, 'the web origin is echoed')
  t.equal(cors.headers['access-control-allow-credentials'], 'true', 'and may send credentials')
  t.match(String(cors.headers.vary), /Origin/)
  const preflight = await app.inject({ method: 'OPTIONS', url: '/v0/me', headers: { origin: WEB, 'access-control-request-method': 'PATCH' } })
  t.equal(preflight.headers['access-control-allow-credentials'], 'true', 'the preflight allows credentials')
  const other = await app.inject({ url: '/v0/me', headers: { cookie, origin: FOREIGN } })
  t.equal(other.headers['access-control-allow-origin'], '*', 'any other origin gets *')
  t.equal(other.headers['access-control-allow-credentials'], undefined, 'without credentials: its page cannot read the answer')

  const byReferer = await webLogin(app, user, { referer: `${WEB}/kits/12?tab=data` })
  t.ok(sessionSetCookie(byReferer.res), 'a Referer of the web origin, when there is no Origin')
})

t.test('no session cookie for log-ins from anywhere else: clients without cookies, other pages (login CSRF)', async (t) => {
  const { app } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const user = await signUp(app)
  for (const headers of [{}, { origin: FOREIGN }, { origin: SIBLING }, { origin: 'null' }, { referer: `${FOREIGN}/login` }, { origin: FOREIGN, referer: `${WEB}/` }] as Array<Record<string, string>>) {
    const { res } = await webLogin(app, user, headers)
    t.equal(res.statusCode, 200, `${JSON.stringify(headers)}: logged in`)
    t.equal(sessionSetCookie(res), undefined, `${JSON.stringify(headers)}: no session cookie`)
    t.ok(setCookies(res).some((c) => c.startsWith('esp_device_')), `${JSON.stringify(headers)}: the device cookie as before`)
  }
  // Nor without configured web origins at all (the default).
  const bare = await buildApi(t)
  const someone = await signUp(bare.app)
  t.equal(sessionSetCookie((await webLogin(bare.app, someone, { origin: OWN })).res), undefined, 'no web origins: no session cookies')
})

t.test('over HTTPS the cookie is __Host- prefixed and Secure, and only that name is read', async (t) => {
  const { app } = await buildApi(t, { server: { credentialedOrigins: [WEB], trustProxy: true } })
  const user = await signUp(app)
  const https = { 'x-forwarded-proto': 'https' }
  const { res, cookie } = await webLogin(app, user, { origin: WEB, ...https })
  const token = res.json().access_token as string
  t.equal(sessionSetCookie(res, '__Host-esp_session'), `__Host-esp_session=${token}; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax; Secure`)
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie, ...https } })).json().id, user.id)
  // A cookie without the prefix can be planted by a sibling subdomain: over HTTPS it is no session.
  t.equal((await app.inject({ url: '/v0/me', headers: { ...sessionCookie(token), ...https } })).statusCode, 401, 'esp_session is not read over https')
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie: `__Host-esp_session=${token}` } })).statusCode, 401, 'nor __Host-esp_session over http')
  const out = await app.inject({ method: 'DELETE', url: '/v0/sessions', headers: { cookie, origin: WEB, ...https } })
  t.equal(out.statusCode, 200)
  t.ok(setCookies(out).includes('__Host-esp_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure'), 'cleared with the attributes it was set with')
})

t.test('CSRF: a write authenticated by the cookie only from the web origin or the API\'s own', async (t) => {
  const { app } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const user = await signUp(app)
  const { cookie } = await webLogin(app, user)
  const city = async (): Promise<unknown> => (await app.inject({ url: '/v0/me', headers: bearer(user.token) })).json().location?.city
  const before = await city()
  const refused: Array<Record<string, string>> = [
    { origin: FOREIGN },
    { origin: SIBLING },
    { origin: 'null' },
    { origin: 'https://web.example.org.evil.example.net' },
    { origin: WEB.replace('https', 'http') },
    { referer: `${FOREIGN}/page` },
    {}
  ]
  for (const headers of refused) {
    for (const method of ['PATCH', 'PUT'] as const) {
      const res = await app.inject({ method, url: '/v0/me', headers: { cookie, ...headers }, payload: { city: 'Forged' } })
      t.equal(res.statusCode, 403, `${method} /me from ${JSON.stringify(headers)}`)
      t.same(res.json(), { id: 'forbidden', message: String(res.json().message), errors: null, url: null }, 'the one error shape')
    }
  }
  t.equal((await app.inject({ method: 'DELETE', url: '/v0/me', headers: { cookie, origin: FOREIGN } })).statusCode, 403, 'DELETE /me from another page')
  t.equal((await app.inject({ method: 'POST', url: '/v0/devices', headers: { cookie, origin: FOREIGN }, payload: { name: 'Forged kit' } })).statusCode, 403, 'POST /devices from another page')
  t.equal(await city(), before, 'nothing changed')
  const devices = (await app.inject({ url: '/v0/me', headers: bearer(user.token) })).json().devices as unknown[]
  t.equal(devices.length, 0, 'no device was made')
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie, origin: FOREIGN } })).statusCode, 200, 'the account is still there, and reads are fine from any page')

  for (const [headers, value] of [[{ origin: WEB }, 'Web'], [{ referer: `${WEB}/profile` }, 'Referred'], [{ origin: OWN }, 'Own']] as const) {
    const res = await app.inject({ method: 'PATCH', url: '/v0/me', headers: { cookie, ...headers }, payload: { city: value } })
    t.equal(res.statusCode, 200, `PATCH /me from ${JSON.stringify(headers)}`)
    t.equal(await city(), value)
  }
  const made = await app.inject({ method: 'POST', url: '/v0/devices', headers: { cookie, origin: WEB }, payload: { name: 'Web kit', exposure: 'indoor' } })
  t.equal(made.statusCode, 201, `POST /devices from the web (${made.body.slice(0, 100)})`)
  // A token is sent on purpose, never by a browser on its own: no origin rule for it.
  t.equal((await app.inject({ method: 'PATCH', url: '/v0/me', headers: { ...bearer(user.token), origin: FOREIGN }, payload: { city: 'Bearer' } })).statusCode, 200, 'Bearer from any page')
})

t.test('a bad session cookie is a bad token: the same 401, the cookie cleared, the same throttle', async (t) => {
  const SMALL: ThrottleSettings = { accountFailures: 3, addressFailures: 6, windowSeconds: 600, lockoutSeconds: 300, maxLockoutSeconds: 1200 }
  const { app, database } = await buildApi(t, { server: { credentialedOrigins: [WEB] }, auth: { throttle: SMALL } })
  const user = await signUp(app)
  // Each failure below from an address of its own: the throttle (checked last) is not under test yet.
  let addresses = 0
  const as = (options: InjectOptions): InjectOptions => ({ ...options, remoteAddress: `192.0.2.${++addresses}` })
  const forged = `${user.token.slice(0, -2)}xx`
  const viaBearer = await app.inject(as({ url: '/v0/me', headers: bearer(forged) }))
  for (const value of ['garbage', forged, 'x'.repeat(5000)]) {
    const res = await app.inject(as({ url: '/v0/me', headers: sessionCookie(value) }))
    t.equal(res.statusCode, 401, `${value.slice(0, 20)}: 401`)
    t.same(res.json(), viaBearer.json(), 'the body of a bad Bearer token')
    t.equal(res.headers['www-authenticate'], viaBearer.headers['www-authenticate'])
    t.ok(setCookies(res).includes('esp_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax'), 'the browser is told to drop it')
    t.equal((await app.inject(as({ url: '/v0/devices', headers: sessionCookie(value) }))).statusCode, 401, 'even where anonymous callers are welcome, as a bad token')
  }
  t.equal((await app.inject(as({ url: '/v0/devices', headers: { cookie: 'esp_session=' } }))).statusCode, 200, 'an emptied cookie is no credential')

  // Revoked (a password change revokes every token) and expired.
  const revoked = await webLogin(app, user)
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie: revoked.cookie } })).statusCode, 200)
  t.equal((await app.inject({ method: 'PATCH', url: '/v0/me', headers: bearer(user.token), payload: { password: 'a brand new secret' } })).statusCode, 200)
  t.equal((await app.inject(as({ url: '/v0/me', headers: { cookie: revoked.cookie } }))).statusCode, 401, 'revoked with the password change')
  const fresh = await webLogin(app, { ...user, password: 'a brand new secret' })
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie: fresh.cookie } })).statusCode, 200)
  await database.sql`update access_tokens set expires_at = now() - interval '1 second' where user_id = ${user.id}`
  await database.sql`update auth_generation set value = value + 1`
  t.equal((await app.inject(as({ url: '/v0/me', headers: { cookie: fresh.cookie } }))).statusCode, 401, 'expired')

  // Guessing: counted per address as wrong tokens are; a valid cookie still passes (an issued secret).
  const other = await signUp(app)
  const valid = (await webLogin(app, other)).cookie
  const address = '198.51.100.77'
  const guess = async (i: number): Promise<number> => (await app.inject({ url: '/v0/me', headers: sessionCookie(`guessed.token.${i}`), remoteAddress: address })).statusCode
  const statuses: number[] = []
  for (let i = 0; i < SMALL.addressFailures; i++) statuses.push(await guess(i))
  t.same(statuses, Array(SMALL.addressFailures).fill(401), 'answered as bad tokens up to the limit')
  t.equal(await guess(99), 429, 'then refused')
  t.equal((await app.inject({ url: '/v0/me', headers: { ...bearer('forged.bearer.token') }, remoteAddress: address })).statusCode, 429, 'the same count as Bearer tokens')
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie: valid }, remoteAddress: address })).statusCode, 200, 'a valid session from the locked address')
})

t.test('credentials sent on purpose win over the cookie; JSON-P never uses it', async (t) => {
  const { app, database } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const alice = await signUp(app)
  const bob = await signUp(app)
  const { cookie } = await webLogin(app, alice)
  const whoami = async (options: InjectOptions): Promise<LightMyRequestResponse> => await app.inject({ url: '/v0/me', ...options })
  t.equal((await whoami({ headers: { cookie, ...bearer(bob.token) } })).json().id, bob.id, 'Bearer wins')
  t.equal((await whoami({ url: `/v0/me?access_token=${bob.token}`, headers: { cookie } })).json().id, bob.id, '?access_token= wins')
  t.equal((await whoami({ headers: { cookie, authorization: `Basic ${Buffer.from(`${bob.username}:${bob.password}`).toString('base64')}` } })).json().id, bob.id, 'Basic wins')
  t.equal((await whoami({ headers: { cookie, ...bearer('forged') } })).statusCode, 401, 'a bad Bearer token is a 401, whatever the cookie')
  t.equal((await whoami({ headers: { cookie, authorization: 'Negotiate abc' } })).statusCode, 401, 'any Authorization header is the client\'s choice: the cookie is not read')

  const hidden = await makeDevice(database, alice.id, { isPrivate: true })
  t.equal((await app.inject({ url: `/v0/devices/${hidden}`, headers: { cookie } })).statusCode, 200, 'the owner sees her private device through the cookie')
  const script = await app.inject({ url: `/v0/devices/${hidden}?callback=steal`, headers: { cookie } })
  const anonymous = await app.inject({ url: `/v0/devices/${hidden}?callback=steal` })
  t.equal(script.statusCode, 404, 'a JSON-P request (any page may include it) is answered as to anyone')
  t.equal(script.body, anonymous.body, 'nothing private is wrapped')
})

t.test('private devices follow the viewer rule for cookie callers', async (t) => {
  const { app, database } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const owner = await signUp(app)
  const stranger = await signUp(app)
  const hidden = await makeDevice(database, owner.id, { isPrivate: true })
  const open = await makeDevice(database, owner.id)
  const ownerCookie = (await webLogin(app, owner)).cookie
  const strangerCookie = (await webLogin(app, stranger)).cookie
  const status = async (id: number, cookie?: string): Promise<number> => (await app.inject({ url: `/v0/devices/${id}`, headers: cookie === undefined ? {} : { cookie } })).statusCode
  t.same([await status(hidden, ownerCookie), await status(hidden, strangerCookie), await status(hidden)], [200, 404, 404], 'private: the owner only')
  t.same([await status(open, ownerCookie), await status(open, strangerCookie), await status(open)], [200, 200, 200], 'public: everyone')
  const patched = await app.inject({ method: 'PATCH', url: `/v0/devices/${open}`, headers: { cookie: strangerCookie, origin: WEB }, payload: { name: 'Mine now' } })
  t.equal(patched.statusCode, 403, 'a stranger\'s cookie from the web origin changes no one else\'s device')
  const mine = await app.inject({ method: 'PATCH', url: `/v0/devices/${open}`, headers: { cookie: ownerCookie, origin: WEB }, payload: { name: 'Renamed' } })
  t.equal(mine.statusCode, 200, 'the owner\'s does')
})

t.test('DELETE /sessions revokes the session everywhere and clears the cookie', async (t) => {
  const { app } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const user = await signUp(app)
  const { res, cookie } = await webLogin(app, user)
  const token = res.json().access_token as string

  const forged = await app.inject({ method: 'DELETE', url: '/v0/sessions', headers: { cookie, origin: FOREIGN } })
  t.equal(forged.statusCode, 403, 'another page cannot log the user out')
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie } })).statusCode, 200, 'the session holds')

  const out = await app.inject({ method: 'DELETE', url: '/v0/sessions', headers: { cookie, origin: WEB } })
  t.equal(out.statusCode, 200)
  t.same(out.json(), { message: 'OK' })
  t.ok(setCookies(out).includes('esp_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax'), 'the cookie is cleared')
  t.equal((await app.inject({ url: '/v0/me', headers: { cookie } })).statusCode, 401, 'the cookie is revoked')
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(token) })).statusCode, 401, 'and so is its token, as a Bearer')
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(user.token) })).statusCode, 200, 'other sessions of the user are not')

  // A client with a token logs out the same way; the anonymous have nothing to end.
  const second = (await webLogin(app, user, {})).res.json().access_token as string
  t.equal((await app.inject({ method: 'DELETE', url: '/v0/sessions', headers: bearer(second) })).statusCode, 200)
  t.equal((await app.inject({ url: '/v0/me', headers: bearer(second) })).statusCode, 401, 'the Bearer token is revoked')
  t.equal((await app.inject({ method: 'DELETE', url: '/v0/sessions' })).statusCode, 401)
})

t.test('the OpenAPI document names the session cookie beside the other credentials', async (t) => {
  const { app } = await buildApi(t, { server: { credentialedOrigins: [WEB] } })
  const document = (await app.inject({ url: '/docs/json' })).json()
  t.match(document.components.securitySchemes.sessionCookie, { type: 'apiKey', in: 'cookie', name: '__Host-esp_session' })
  t.same(document.paths['/v0/me'].get.security, [{ bearer: [] }, { basic: [] }, { accessToken: [] }, { sessionCookie: [] }])
  t.ok(document.paths['/v0/me'].patch.responses['403'], 'writes document the 403 of a cross-site cookie')
  t.match(document.paths['/v0/sessions'].post.description, /session cookie/)
  t.match(document.paths['/v0/sessions'].delete, { operationId: 'deleteSession' })
})
