import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { apiService, type ApiDeps } from '@esp/api'
import type { Database } from '@esp/db'
import { setUserRole } from '@esp/db/testing'
import { systemClock } from '@esp/domain'
import type { AuthOptions, ServerOptions } from '@esp/http'
import { buildTestServer } from './server.js'
import { tempDataDir } from './process.js'

interface Tap { teardown: (fn: () => unknown) => void }

export const TEST_JWT_SECRET = 'test-secret-that-is-at-least-32-characters-long'

export interface ApiHarness {
  app: FastifyInstance
  database: Database
  dataDir: string
}

/** The api service on the shared server, with authentication, on a database of the file's own; a test clock is the clock of token checks too, so tokens it issues do not expire in real time. */
export async function buildApi (t: Tap, options: { deps?: Partial<ApiDeps>, server?: Partial<ServerOptions>, auth?: Partial<AuthOptions>, extra?: (app: FastifyInstance, database: Database, dataDir: string) => Promise<void>, database?: Database } = {}): Promise<ApiHarness> {
  const dataDir = tempDataDir(t)
  let db: Database | undefined
  const { app, database } = await buildTestServer(t, async (app, database) => {
    db = database
    await app.register(apiService, {
      database,
      dataDir,
      accessTokenTtlSeconds: 3600,
      passwordResetTtlSeconds: 3600,
      uploadMaxBytes: 256 * 1024,
      uploadSecret: 'upload-secret',
      ...options.deps
    })
    await options.extra?.(app, database, dataDir)
  }, (database) => ({ auth: { database, jwtSecret: TEST_JWT_SECRET, clock: options.deps?.clock ?? systemClock, ...options.auth }, uploadMaxBytes: 256 * 1024, ...options.server }), options.database)
  void db
  return { app, database, dataDir }
}

let counter = 0

/** Registers a user through the API and logs in; returns the token and the user id. */
export async function signUp (app: FastifyInstance, overrides: Record<string, string> = {}): Promise<{ token: string, id: number, username: string, email: string, password: string }> {
  counter += 1
  const suffix = `${process.pid}x${counter}`
  const body = { username: `user${suffix}`, email: `user${suffix}@example.org`, password: 'correct horse battery', ...overrides }
  const created = await app.inject({ method: 'POST', url: '/v0/users', payload: body })
  if (created.statusCode !== 201) throw new Error(`sign-up failed: ${created.statusCode} ${created.body}`)
  const session = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: body.username, password: body.password } })
  if (session.statusCode !== 200) throw new Error(`login failed: ${session.statusCode} ${session.body}`)
  return { token: session.json().access_token, id: created.json().id, username: body.username, email: body.email, password: body.password }
}

/** A user with a role set directly in the database (only admins can grant roles through the API). */
export async function signUpAs (harness: ApiHarness, role: 'citizen' | 'researcher' | 'admin'): Promise<Awaited<ReturnType<typeof signUp>>> {
  const user = await signUp(harness.app)
  await setUserRole(harness.database, user.id, role)
  return user
}

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

export function errorBody (res: LightMyRequestResponse): { id: string, message: string, errors: unknown, url: unknown } {
  const body = res.json() as { id: string, message: string, errors: unknown, url: unknown }
  return body
}

/** Every message the outbox mailer wrote, oldest first. */
export async function outbox (dataDir: string): Promise<{ to: string, subject: string, text: string }[]> {
  const dir = path.join(dataDir, 'outbox')
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.json')).sort()
  return await Promise.all(files.map(async (f) => JSON.parse(await readFile(path.join(dir, f), 'utf8')) as { to: string, subject: string, text: string }))
}

export const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')

/** A multipart/form-data body for inject(). */
export function multipart (fields: Record<string, string>, files: Record<string, { name: string, type: string, bytes: Buffer }> = {}): { payload: Buffer, headers: Record<string, string> } {
  const boundary = `----esp${Math.random().toString(16).slice(2)}`
  const chunks: Buffer[] = []
  for (const [name, value] of Object.entries(fields)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`))
  }
  for (const [name, file] of Object.entries(files)) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`), file.bytes, Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}
