import http from 'node:http'
import { exporterService } from '@esp/exporter'
import { ingestService } from '@esp/ingest'
import { buildApi, outbox, type ApiHarness } from '@esp/test-helpers/api'

interface Tap { teardown: (fn: () => unknown) => void }

/**
 * The conformance suite talks to the platform only as its clients do (clients.md §4): over HTTP on
 * a real port and MQTT on another. The one exception is making an admin, which only an admin can
 * do through the API: the role is set in the database, as the other suites do (signUpAs).
 */
export interface Platform {
  /** http://127.0.0.1:<port> (no path) */
  origin: string
  /** `${origin}/v0` */
  base: string
  httpPort: number
  mqttPort: number
  mqttUrl: string
  harness: ApiHarness
}

/** The web's origin (clients.md §2.1), allowed to send credentials (CORS_ORIGINS in production). */
export const WEB_ORIGIN = 'https://smartcitizen.me'

/**
 * api, ingest with its embedded broker, and the exporter in one server, as `pnpm start` runs
 * them, listening on free ports, against the test file's own database, with the production
 * defaults clients meet: a 5 MB body for readings (BODY_LIMIT_BYTES), readings up to a day ahead
 * of the clock (READINGS_MAX_FUTURE_SECONDS), the web's origin trusted with credentials
 * (CORS_ORIGINS); and, when asked, a rate limit (RATE_LIMIT_PER_MINUTE, 90 by default).
 */
export async function startPlatform (t: Tap, options: { rateLimitPerMinute?: number } = {}): Promise<Platform> {
  const harness = await buildApi(t, {
    server: {
      bodyLimit: 5 * 1024 * 1024,
      credentialedOrigins: [WEB_ORIGIN],
      ...(options.rateLimitPerMinute !== undefined ? { rateLimit: { perMinute: options.rateLimitPerMinute } } : {})
    },
    extra: async (app, database, dataDir) => {
      await app.register(ingestService, { database, maxValues: 100_000, maxFutureSeconds: 86_400, mqtt: { host: '127.0.0.1', port: 0, explicit: true } })
      // Mails (password resets) land in DATA_DIR/outbox, the user's mailbox here; no cron schedules.
      await app.register(exporterService, { database, dataDir, mailFrom: 'Platform <platform@example.org>', pollingIntervalSeconds: 0.5, schedules: false })
    }
  })
  await harness.app.listen({ host: '127.0.0.1', port: 0 })
  const address = harness.app.server.address()
  const httpPort = typeof address === 'object' && address !== null ? address.port : 0
  const mqttPort = harness.app.mqttListening?.port ?? 0
  const origin = `http://127.0.0.1:${httpPort}`
  return { origin, base: `${origin}/v0`, httpPort, mqttPort, mqttUrl: `mqtt://127.0.0.1:${mqttPort}`, harness }
}

export interface Answer {
  status: number
  headers: Headers
  text: string
  /** the body parsed as JSON; undefined when it is not JSON */
  json: unknown
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/** One request with fetch, as a browser or a script would send it. */
export async function call (url: string, options: { method?: string, token?: string, json?: unknown, headers?: Record<string, string>, body?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  let body: string | undefined = options.body
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json'
    body = JSON.stringify(options.json)
  }
  const res = await fetch(url, { method: options.method ?? 'GET', headers, ...(body !== undefined ? { body } : {}) })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: parse(text) }
}

/**
 * A GET from a loopback address of the caller's choice (127.0.0.0/8): anonymous callers are
 * counted per address, so each simulated browser or script here is a client of its own.
 */
export async function callFrom (localAddress: string, url: string, options: { token?: string } = {}): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const request = http.get(url, { localAddress, headers: options.token === undefined ? {} : { authorization: `Bearer ${options.token}` } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value)
        resolve({ status: res.statusCode ?? 0, headers, text, json: parse(text) })
      })
      res.on('error', reject)
    })
    request.on('error', reject)
  })
}

export interface Account { id: number, username: string, password: string, token: string }

let accounts = 0

/** Signs up and logs in over HTTP as the web did (W13, W12): JSON bodies. */
export async function signUp (platform: Platform, prefix = 'client'): Promise<Account> {
  accounts += 1
  const username = `${prefix}${process.pid}x${accounts}`
  const password = 'a long password'
  const created = await call(`${platform.base}/users`, { method: 'POST', json: { username, password, email: `${username}@example.org`, conditions: true } })
  if (created.status !== 201) throw new Error(`sign-up: ${created.status} ${created.text}`)
  return { id: (created.json as { id: number }).id, username, password, token: await logIn(platform, username, password) }
}

/** An admin or a researcher: signed up over HTTP, the role set in the database (only an admin can grant it). */
export async function signUpAs (platform: Platform, role: 'admin' | 'researcher'): Promise<Account> {
  const account = await signUp(platform, role)
  await platform.harness.database.sql`update users set role = ${role} where id = ${account.id}`
  // A fresh session, so that no cached credential of the old role is in play.
  return { ...account, token: await logIn(platform, account.username, account.password) }
}

export async function logIn (platform: Platform, username: string, password: string): Promise<string> {
  const session = await call(`${platform.base}/sessions`, { method: 'POST', json: { username, password } })
  if (session.status !== 200) throw new Error(`log-in: ${session.status} ${session.text}`)
  return (session.json as { access_token: string }).access_token
}

export interface Device { id: number, token: string, body: Record<string, unknown> }

/** POST /v0/devices as the web's new-kit form does (W21); the token comes back to the owner. */
export async function addDevice (platform: Platform, owner: Account, fields: Record<string, unknown> = {}): Promise<Device> {
  const created = await call(`${platform.base}/devices`, {
    method: 'POST',
    token: owner.token,
    json: { name: 'Balcony', description: 'a kit', exposure: 'outdoor', latitude: 41.38879, longitude: 2.15899, ...fields }
  })
  if (created.status !== 201) throw new Error(`device: ${created.status} ${created.text}`)
  const body = created.json as Record<string, unknown>
  return { id: body.id as number, token: body.device_token as string, body }
}

/** POST /v0/devices/:id/readings with the connector's body (C3). */
export async function postReadings (platform: Platform, owner: Account, deviceId: number, data: Array<{ recorded_at: string, sensors: Array<{ id: number | string, value: number }> }>): Promise<Answer> {
  return await call(`${platform.base}/devices/${deviceId}/readings`, { method: 'POST', token: owner.token, json: { data } })
}

/** The mails the platform sent so far (the outbox mailer of DATA_DIR), oldest first. */
export async function mailbox (platform: Platform): Promise<Array<{ to: string, subject: string, text: string }>> {
  return await outbox(platform.harness.dataDir)
}

/** Polls until the check holds; throws with what it waited for. */
export async function until (check: () => boolean | Promise<boolean>, timeoutMs = 15_000, what = 'a condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
