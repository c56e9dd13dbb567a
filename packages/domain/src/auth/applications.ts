import { type ApplicationRow, deleteApplicationRow, findApplicationByUid, findOwnedApplication, type Handle, insertApplication, listOwnedApplications, updateApplicationRow } from '@esp/db'
import { ApiError, errors } from '../errors.js'
import { formatTimestamp } from '../time.js'
import { recordIdOr404 } from '../validation/record-id.js'
import { revokeCredentials } from './revocation.js'
import { randomSecret, safeEqual, sha256 } from './secrets.js'
import { issueAccessToken, passwordLogin, type IssuedToken, type TokenSigner } from './tokens.js'
import type { CredentialGate } from './throttle.js'
import type { Viewer } from './viewer.js'

export interface ApplicationInput { name?: string | undefined, redirect_uri?: string | null | undefined, scopes?: string | undefined }

/** The secret is shown once, at creation; afterwards only its hash exists. */
export function presentApplication (row: ApplicationRow, secret: string | null) {
  return {
    id: row.id,
    name: row.name,
    uid: row.uid,
    secret,
    redirect_uri: row.redirectUri,
    scopes: row.scopes,
    created_at: formatTimestamp(row.createdAt),
    updated_at: formatTimestamp(row.updatedAt)
  }
}

function validate (input: ApplicationInput, creating: boolean): void {
  const problems: Record<string, string[]> = {}
  if (creating || input.name !== undefined) {
    if (input.name === undefined || input.name.trim() === '') problems.name = ["can't be blank"]
    else if (input.name.length > 255) problems.name = ['is too long (maximum is 255 characters)']
  }
  const uri = input.redirect_uri
  if (uri !== undefined && uri !== null && uri !== '') {
    try {
      const parsed = new URL(uri)
      if (parsed.protocol === 'javascript:' || parsed.protocol === 'data:') problems.redirect_uri = ['is invalid']
    } catch { problems.redirect_uri = ['is invalid'] }
  }
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
}

export async function createApplication (database: Handle, viewer: Viewer, input: ApplicationInput, now: Date) {
  validate(input, true)
  const secret = randomSecret(32)
  const row = await insertApplication(database, {
    ownerId: viewer.id,
    name: (input.name ?? '').trim(),
    uid: randomSecret(24),
    secretHash: sha256(secret),
    redirectUri: input.redirect_uri === '' ? null : input.redirect_uri ?? null,
    scopes: input.scopes ?? '',
    createdAt: now,
    updatedAt: now
  })
  if (row === undefined) throw new Error('insert returned no row')
  return presentApplication(row, secret)
}

/** Applications are private to their owner: another user's id is simply not found. */
export async function ownApplication (database: Handle, viewer: Viewer, raw: string | number): Promise<ApplicationRow> {
  const id = recordIdOr404('Application', raw)
  const row = await findOwnedApplication(database, id, viewer.id)
  if (row === undefined) throw errors.notFound('Application', id)
  return row
}

export async function listApplications (database: Handle, viewer: Viewer) {
  const rows = await listOwnedApplications(database, viewer.id)
  return rows.map((row) => presentApplication(row, null))
}

export async function updateApplication (database: Handle, viewer: Viewer, raw: string | number, input: ApplicationInput, now: Date) {
  validate(input, false)
  const { id } = await ownApplication(database, viewer, raw)
  const row = await updateApplicationRow(database, id, {
    ...(input.name !== undefined ? { name: input.name.trim() } : {}),
    ...(input.redirect_uri !== undefined ? { redirectUri: input.redirect_uri === '' ? null : input.redirect_uri } : {}),
    ...(input.scopes !== undefined ? { scopes: input.scopes } : {}),
    updatedAt: now
  })
  if (row === undefined) throw errors.notFound('Application', id)
  return presentApplication(row, null)
}

export async function deleteApplication (database: Handle, viewer: Viewer, raw: string | number): Promise<void> {
  const { id } = await ownApplication(database, viewer, raw)
  await deleteApplicationRow(database, id)
  // Its tokens went with it (on delete cascade): remembered ones must not outlive them.
  await revokeCredentials(database, viewer.id)
}

/** RFC 6749 error, carried in the one error body (`id` is the OAuth error code). */
const oauthError = (status: number, code: string, message: string): ApiError =>
  new ApiError({ code: `ESP_OAUTH_${code.toUpperCase()}`, id: code, statusCode: status, message })

/**
 * The token endpoint's password grant: client credentials, then the user's (RFC 6749 §4.3). Both
 * pass the gate: the client secret as a secret the platform issued (a valid one always passes,
 * wrong ones count for the address), the user's password as every password does.
 */
export async function passwordGrant (database: Handle, signer: TokenSigner, gate: CredentialGate, input: {
  grantType: string | undefined,
  clientId: string | undefined,
  clientSecret: string | undefined,
  username: string | undefined,
  password: string | undefined,
  ttlSeconds: number,
  now: Date
}): Promise<IssuedToken & { userId: number, deviceCookie: string }> {
  if (input.grantType !== 'password') throw oauthError(400, 'unsupported_grant_type', 'Only grant_type=password is supported')
  if (input.clientId === undefined || input.clientSecret === undefined) throw oauthError(401, 'invalid_client', 'Client authentication failed')
  const { clientId, clientSecret, username, password } = input
  const app = await gate.verifyToken(async () => {
    const row = await findApplicationByUid(database, clientId)
    return row !== undefined && safeEqual(row.secretHash, sha256(clientSecret)) ? row : null
  })
  if (app === null) throw oauthError(401, 'invalid_client', 'Client authentication failed')
  if (username === undefined || password === undefined) throw oauthError(400, 'invalid_request', 'username and password are required')
  const signedIn = await passwordLogin(database, gate, username, password)
  if (signedIn === null) throw oauthError(400, 'invalid_grant', 'The resource owner credentials are invalid')
  const issued = await issueAccessToken(database, signer, { userId: signedIn.account.id, applicationId: app.id, ttlSeconds: input.ttlSeconds, now: input.now })
  return { ...issued, userId: signedIn.account.id, deviceCookie: signedIn.deviceCookie }
}
