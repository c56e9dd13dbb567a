import { and, eq, inArray, isNull, or, sql } from 'drizzle-orm'
import { accessTokens, devices, type Db, type Executor, isPgCode, PgCode, type UserRole, userRoles, users } from '@esp/db'
import { errors } from '../errors.js'
import { oncePer } from '../once-per.js'
import { recordId } from '../validation/record-id.js'
import { revokeCredentials } from '../auth/credential-cache.js'
import { hashPassword, randomSecret } from '../auth/secrets.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import type { ListQuery, FilterSpec } from '../lists/filter-compiler.js'
import { listPage } from '../lists/page.js'
import type { Clock } from '../time.js'
import { blankToNull, type UserInput, validateUserInput } from './user-rules.js'
import type { UserRow } from './user-presenter.js'

export interface UserWrite extends UserInput { role?: string | undefined }

export const userFilters: FilterSpec = {
  id: { column: users.id, type: 'integer' },
  uuid: { column: users.uuid, type: 'uuid' },
  username: { column: users.username, type: 'text' },
  city: { column: users.city, type: 'text' },
  country_code: { column: users.countryCode, type: 'text' },
  created_at: { column: users.createdAt, type: 'timestamp' },
  updated_at: { column: users.updatedAt, type: 'timestamp' },
  role: { column: users.role, type: 'text', adminOnly: true }
}

const active = isNull(users.archivedAt)

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

async function assertUnique (db: Executor, input: UserInput, exceptId?: number): Promise<void> {
  const conditions = []
  if (input.username !== undefined) conditions.push(sql`lower(${users.username}) = lower(${input.username.trim()})`)
  if (input.email !== undefined) conditions.push(sql`lower(${users.email}) = lower(${input.email.trim()})`)
  if (conditions.length === 0) return
  const clash = await db.select({ id: users.id, username: users.username, email: users.email }).from(users).where(or(...conditions))
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

export async function registerUser (db: Db, input: UserWrite, viewer: Viewer | null): Promise<UserRow> {
  const problems = validateUserInput(input, true)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  await assertUnique(db, input)
  const role = checkRole(input.role, viewer) ?? 'citizen'
  try {
    const [row] = await db.insert(users).values({
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
    }).returning()
    if (row === undefined) throw new Error('insert returned no row')
    return row
  } catch (err) {
    return translateUnique(err)
  }
}

/** Self or admin (contract: Users); a password change revokes every access token of the user. */
export async function updateUser (db: Db, target: UserRow, input: UserWrite, viewer: Viewer | null, clock: Clock): Promise<UserRow> {
  if (viewer === null) throw errors.unauthorized()
  if (viewer.id !== target.id && !isAdmin(viewer)) throw errors.forbidden()
  const problems = validateUserInput(input, false)
  if (Object.keys(problems).length > 0) throw errors.unprocessable(problems)
  await assertUnique(db, input, target.id)
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
    return await db.transaction(async (tx) => {
      const [row] = await tx.update(users).set(changes).where(eq(users.id, target.id)).returning()
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

export async function setProfilePicture (db: Executor, userId: number, key: string, now: Date): Promise<UserRow> {
  const [row] = await db.update(users).set({ profilePicture: key, updatedAt: now }).where(eq(users.id, userId)).returning()
  if (row === undefined) throw errors.notFound('User', userId)
  return row
}

/** Every token of the user, and every credential of theirs any process remembers (in the caller's transaction). */
export async function revokeTokens (db: Executor, userId: number, now: Date): Promise<void> {
  await db.update(accessTokens).set({ revokedAt: now }).where(and(eq(accessTokens.userId, userId), isNull(accessTokens.revokedAt)))
  await revokeCredentials(db, userId)
}

/** Archives the account and its devices; the purge job removes them later. */
export async function archiveUser (db: Db, target: UserRow, viewer: Viewer | null, clock: Clock): Promise<void> {
  if (viewer === null) throw errors.unauthorized()
  if (viewer.id !== target.id && !isAdmin(viewer)) throw errors.forbidden()
  const now = clock()
  await db.transaction(async (tx) => {
    await tx.update(users).set({ archivedAt: now, updatedAt: now }).where(eq(users.id, target.id))
    await tx.update(devices).set({ archivedAt: now, state: 'archived', oldMacAddress: devices.macAddress, macAddress: null, updatedAt: now })
      .where(and(eq(devices.ownerId, target.id), isNull(devices.archivedAt)))
    await revokeTokens(tx, target.id, now)
  })
}

/** GET /users/:id is a hot read: its statements are built once, not per request. */
const userStatements = oncePer((db: Executor) => ({
  byId: db.select().from(users).where(and(active, eq(users.id, sql.placeholder('id')))).limit(1).prepare('esp_user_by_id'),
  byUsername: db.select().from(users).where(and(active, eq(users.username, sql.placeholder('username')))).limit(1).prepare('esp_user_by_username')
}))

/** `:id_or_username`: digits are an id, anything else an exact username (usernames are never all digits). */
export async function findUser (db: Executor, key: string | number): Promise<UserRow> {
  const id = recordId(key)
  const { byId, byUsername } = userStatements(db)
  const [row] = id !== null ? await byId.execute({ id }) : await byUsername.execute({ username: String(key) })
  if (row === undefined) throw errors.notFound('User', id ?? String(key))
  return row
}

export async function listUsers (db: Executor, query: ListQuery): Promise<{ rows: UserRow[], total: number }> {
  return await listPage(db, users, query, users.id, active)
}

export async function usersByIds (db: Executor, ids: number[]): Promise<UserRow[]> {
  return ids.length === 0 ? [] : await db.select().from(users).where(inArray(users.id, ids))
}
