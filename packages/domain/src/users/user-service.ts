import { archiveUserAndDevices, findActiveUserById, findActiveUserByUsername, findUsersByIds, findUsersNamed, type Handle, inTransaction, insertUser, listActiveUsers, isPgCode, PgCode, revokeAccessTokensOfUser, updateUserRow, type UserRole, userRoles } from '@esp/db'
import { errors } from '../errors.js'
import { recordId } from '../validation/record-id.js'
import { revokeCredentials } from '../auth/revocation.js'
import { hashPassword, randomSecret } from '../auth/secrets.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import type { ListQuery } from '../lists/filter-compiler.js'
import type { Clock } from '../time.js'
import { blankToNull, type UserInput, validateUserInput } from './user-rules.js'
import type { UserRow } from './user-presenter.js'

export interface UserWrite extends UserInput { role?: string | undefined }

// The list's field map is packages/db's (queries/users.ts).
export { userFilters } from '@esp/db'

/** Forwarding credentials exist for researchers and admins, and survive a later downgrade. */
function forwardingFor (role: UserRole, row?: Pick<UserRow, 'forwardingToken' | 'forwardingUsername'>) {
  if (role === 'citizen') return {}
  return {
    forwardingToken: row?.forwardingToken ?? randomSecret(12),
    forwardingUsername: row?.forwardingUsername ?? randomSecret(12)
  }
}

function checkRole (role: string | undefined, viewer: Viewer | null, target?: UserRow): UserRole | undefined {
  if (role === undefined) return undefined
  // Only admins change roles; anyone else's `role` is dropped like any unpermitted parameter.
  if (!isAdmin(viewer)) return undefined
  if (!(userRoles as readonly string[]).includes(role)) throw errors.unprocessable({ role: [`is not included in the list (${userRoles.join(', ')})`] })
  if (target !== undefined && target.id === viewer?.id && role !== target.role) throw errors.unprocessable({ role: ["can't change your own role"] })
  return role as UserRole
}

async function assertUnique (database: Handle, input: UserInput, exceptId?: number): Promise<void> {
  if (input.username === undefined && input.email === undefined) return
  const clash = await findUsersNamed(database, { username: input.username?.trim(), email: input.email?.trim() })
  const taken: Record<string, string[]> = {}
  for (const other of clash) {
    if (other.id === exceptId) continue
    if (input.username !== undefined && other.username.toLowerCase() === input.username.trim().toLowerCase()) taken.username = ['has already been taken']
    if (input.email !== undefined && other.email.toLowerCase() === input.email.trim().toLowerCase()) taken.email = ['has already been taken']
  }
  if (Object.keys(taken).length > 0) throw errors.unprocessable(taken)
}

/** A concurrent insert can still win the race: the unique index has the last word. */
function translateUnique (err: unknown): never {
  if (isPgCode(err, PgCode.uniqueViolation)) {
    const text = String((err as { cause?: { constraint_name?: string } }).cause?.constraint_name ?? err)
    throw errors.unprocessable(text.includes('email') ? { email: ['has already been taken'] } : { username: ['has already been taken'] })
  }
  throw err
}

export async function registerUser (database: Handle, input: UserWrite, viewer: Viewer | null): Promise<UserRow> {
  const problems = validateUserInput(input, true)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  await assertUnique(database, input)
  const role = checkRole(input.role, viewer) ?? 'citizen'
  try {
    const row = await insertUser(database, {
      email: (input.email ?? '').trim(),
      username: (input.username ?? '').trim(),
      passwordHash: await hashPassword(input.password ?? ''),
      role,
      city: blankToNull(input.city) ?? null,
      countryCode: blankToNull(input.country_code)?.toUpperCase() ?? null,
      url: blankToNull(input.url) ?? null,
      firstName: blankToNull(input.first_name) ?? null,
      lastName: blankToNull(input.last_name) ?? null,
      legacyApiKey: randomSecret(20),
      ...forwardingFor(role)
    })
    if (row === undefined) throw new Error('insert returned no row')
    return row
  } catch (err) {
    return translateUnique(err)
  }
}

/** Self or admin (contract: Users); a password change revokes every access token of the user. */
export async function updateUser (database: Handle, target: UserRow, input: UserWrite, viewer: Viewer | null, clock: Clock): Promise<UserRow> {
  if (viewer === null) throw errors.unauthorized()
  if (viewer.id !== target.id && !isAdmin(viewer)) throw errors.forbidden()
  const problems = validateUserInput(input, false)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  await assertUnique(database, input, target.id)
  const role = checkRole(input.role, viewer, target)
  const now = clock()
  const changes = {
    ...(input.email !== undefined ? { email: input.email.trim() } : {}),
    ...(input.username !== undefined ? { username: input.username.trim() } : {}),
    ...(input.password !== undefined ? { passwordHash: await hashPassword(input.password) } : {}),
    ...(input.city !== undefined ? { city: blankToNull(input.city) ?? null } : {}),
    ...(input.country_code !== undefined ? { countryCode: blankToNull(input.country_code)?.toUpperCase() ?? null } : {}),
    ...(input.url !== undefined ? { url: blankToNull(input.url) ?? null } : {}),
    ...(input.first_name !== undefined ? { firstName: blankToNull(input.first_name) ?? null } : {}),
    ...(input.last_name !== undefined ? { lastName: blankToNull(input.last_name) ?? null } : {}),
    ...(role !== undefined ? { role, ...forwardingFor(role, target) } : {}),
    updatedAt: now
  }
  try {
    return await inTransaction(database, async (tx) => {
      const row = await updateUserRow(tx, target.id, changes)
      if (input.password !== undefined) await revokeTokens(tx, target.id, now)
      // What a remembered login or viewer holds changed: every process checks it again.
      else if (role !== undefined || input.username !== undefined || input.email !== undefined) await revokeCredentials(tx, target.id)
      if (row === undefined) throw errors.notFound('User', target.id)
      return row
    })
  } catch (err) {
    return translateUnique(err)
  }
}

export async function setProfilePicture (database: Handle, userId: number, key: string, now: Date): Promise<UserRow> {
  const row = await updateUserRow(database, userId, { profilePicture: key, updatedAt: now })
  if (row === undefined) throw errors.notFound('User', userId)
  return row
}

/** Every token of the user, and every credential of theirs any process remembers (in the caller's transaction). */
export async function revokeTokens (tx: Handle, userId: number, now: Date): Promise<void> {
  await revokeAccessTokensOfUser(tx, userId, now)
  await revokeCredentials(tx, userId)
}

/** Archives the account and its devices; the purge job removes them later. */
export async function archiveUser (database: Handle, target: UserRow, viewer: Viewer | null, clock: Clock): Promise<void> {
  if (viewer === null) throw errors.unauthorized()
  if (viewer.id !== target.id && !isAdmin(viewer)) throw errors.forbidden()
  const now = clock()
  await inTransaction(database, async (tx) => {
    await archiveUserAndDevices(tx, target.id, now)
    await revokeTokens(tx, target.id, now)
  })
}

/** `:id_or_username`: digits are an id, anything else an exact username (usernames are never all digits). */
export async function findUser (database: Handle, key: string | number): Promise<UserRow> {
  const id = recordId(key)
  const row = id !== null ? await findActiveUserById(database, id) : await findActiveUserByUsername(database, String(key))
  if (row === undefined) throw errors.notFound('User', id ?? String(key))
  return row
}

export async function listUsers (h: Handle, query: ListQuery): Promise<{ rows: UserRow[], total: number }> {
  return await listActiveUsers(h, query)
}

export async function usersByIds (database: Handle, ids: number[]): Promise<UserRow[]> {
  return await findUsersByIds(database, ids)
}
