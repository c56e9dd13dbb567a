import { and, asc, eq, gt, inArray, isNull, or, sql } from 'drizzle-orm'
import type { Db, Handle } from '../client.js'
import { notifyChange } from '../changes.js'
import { devices } from '../schema/devices.js'
import { accessTokens, authGeneration, oauthApplications, passwordResets, type UserRole, users } from '../schema/users.js'
import { type FilterSpec, type ListQuery, listPage } from './lists.js'

/*
 * The statements of users and their credentials: accounts, access tokens, OAuth client
 * applications, password resets, the auth generation and the admin bootstrap. The rules (who may
 * do what, validation, what a revocation must bump) are the domain's (domain/src/auth,
 * domain/src/users); these only read and write rows.
 */

export type UserRow = typeof users.$inferSelect
export type ApplicationRow = typeof oauthApplications.$inferSelect
export type PasswordResetRow = typeof passwordResets.$inferSelect

/** The columns of a new user the caller sets (the rest have defaults). */
export type NewUser = typeof users.$inferInsert
/** Columns of a user to change; the others stay as they are. */
export type UserChanges = Partial<Omit<NewUser, 'id' | 'uuid' | 'createdAt'>>

/** Made once per handle (statements built and prepared once), kept as long as the handle's Drizzle database lives. */
function perHandle<T> (make: (db: Db) => T): (h: Handle) => T {
  const made = new WeakMap<Db, T>()
  return (h) => {
    let value = made.get(h.db)
    if (value === undefined) made.set(h.db, value = make(h.db))
    return value
  }
}

const active = isNull(users.archivedAt)

// ---- users

/** GET /users/:id is a hot read: its statements are built once per handle, not per request. */
const userStatements = perHandle((db) => ({
  byId: db.select().from(users).where(and(active, eq(users.id, sql.placeholder('id')))).limit(1).prepare('esp_user_by_id'),
  byUsername: db.select().from(users).where(and(active, eq(users.username, sql.placeholder('username')))).limit(1).prepare('esp_user_by_username')
}))

/** An active (not archived) user by id. */
export async function findActiveUserById (h: Handle, id: number): Promise<UserRow | undefined> {
  const [row] = await userStatements(h).byId.execute({ id })
  return row
}

/** An active (not archived) user by exact username. */
export async function findActiveUserByUsername (h: Handle, username: string): Promise<UserRow | undefined> {
  const [row] = await userStatements(h).byUsername.execute({ username })
  return row
}

/** The users of these ids, archived ones included, in no particular order. */
export async function findUsersByIds (h: Handle, ids: number[]): Promise<UserRow[]> {
  return ids.length === 0 ? [] : await h.db.select().from(users).where(inArray(users.id, ids))
}

/** Every user whose username or e-mail equals one of these, ignoring case (a uniqueness check). */
export async function findUsersNamed (h: Handle, names: { username?: string | undefined, email?: string | undefined }): Promise<Array<{ id: number, username: string, email: string }>> {
  const conditions = []
  if (names.username !== undefined) conditions.push(sql`lower(${users.username}) = lower(${names.username})`)
  if (names.email !== undefined) conditions.push(sql`lower(${users.email}) = lower(${names.email})`)
  if (conditions.length === 0) return []
  return await h.db.select({ id: users.id, username: users.username, email: users.email }).from(users).where(or(...conditions))
}

export async function insertUser (h: Handle, values: NewUser): Promise<UserRow | undefined> {
  const [row] = await h.db.insert(users).values(values).returning()
  return row
}

/** The user's row after the change, undefined when there is no such user. */
export async function updateUserRow (h: Handle, id: number, changes: UserChanges): Promise<UserRow | undefined> {
  const [row] = await h.db.update(users).set(changes).where(eq(users.id, id)).returning()
  return row
}

/** Archives the user and their devices that are not archived yet (a device's MAC address is set aside). */
export async function archiveUserAndDevices (h: Handle, userId: number, now: Date): Promise<void> {
  await h.db.update(users).set({ archivedAt: now, updatedAt: now }).where(eq(users.id, userId))
  await h.db.update(devices).set({ archivedAt: now, state: 'archived', oldMacAddress: devices.macAddress, macAddress: null, updatedAt: now })
    .where(and(eq(devices.ownerId, userId), isNull(devices.archivedAt)))
}

/** An active account a login names (its username or e-mail, ignoring case), with what a password check needs. */
export async function findLoginAccount (h: Handle, login: string): Promise<{ id: number, username: string, role: UserRole, passwordHash: string | null } | undefined> {
  const [row] = await h.db.select({ id: users.id, username: users.username, role: users.role, passwordHash: users.passwordHash })
    .from(users)
    .where(and(isNull(users.archivedAt), or(sql`lower(${users.username}) = lower(${login})`, sql`lower(${users.email}) = lower(${login})`)))
    .limit(1)
  return row
}

// ---- admin bootstrap

/** Serialises admin bootstraps across replicas until the caller's transaction ends. */
export async function lockAdminBootstrap (h: Handle): Promise<void> {
  await h.db.execute(sql`select pg_advisory_xact_lock(7250331002)`)
}

/** The user of this username (ignoring case, archived ones included), with their forwarding credentials. */
export async function findUserForAdmin (h: Handle, username: string): Promise<{ id: number, forwardingToken: string | null, forwardingUsername: string | null } | undefined> {
  const [row] = await h.db.select({ id: users.id, forwardingToken: users.forwardingToken, forwardingUsername: users.forwardingUsername })
    .from(users).where(sql`lower(${users.username}) = lower(${username})`).limit(1)
  return row
}

/** Sets the fields of an existing account that the admin bootstrap decides. */
export async function setAdminAccount (h: Handle, id: number, changes: UserChanges): Promise<void> {
  await h.db.update(users).set(changes).where(eq(users.id, id))
}

/** A new account of the admin bootstrap; its id. */
export async function insertAdminAccount (h: Handle, values: NewUser): Promise<number | undefined> {
  const [row] = await h.db.insert(users).values(values).returning({ id: users.id })
  return row?.id
}

// ---- auth generation

/**
 * In the caller's transaction: bumps the one-row auth generation, then sends `{ userId }` on
 * `topic` through the change feed (delivered when, and only if, the transaction commits).
 */
export async function bumpAuthGeneration (h: Handle, topic: string, userId: number | null): Promise<void> {
  await h.db.update(authGeneration).set({ value: sql`${authGeneration.value} + 1` }).where(eq(authGeneration.id, 1))
  await notifyChange(h.db, topic, { userId })
}

// ---- access tokens

export async function insertAccessToken (h: Handle, values: { userId: number, applicationId: number | null, tokenHash: string, expiresAt: Date, createdAt: Date }): Promise<void> {
  await h.db.insert(accessTokens).values(values)
}

/** Revokes the unrevoked token of this hash; the user it belonged to, undefined when there was none. */
export async function revokeAccessTokenByHash (h: Handle, tokenHash: string, now: Date): Promise<{ userId: number } | undefined> {
  const [row] = await h.db.update(accessTokens).set({ revokedAt: now }).where(and(eq(accessTokens.tokenHash, tokenHash), isNull(accessTokens.revokedAt)))
    .returning({ userId: accessTokens.userId })
  return row
}

/** Revokes every unrevoked token of the user. */
export async function revokeAccessTokensOfUser (h: Handle, userId: number, now: Date): Promise<void> {
  await h.db.update(accessTokens).set({ revokedAt: now }).where(and(eq(accessTokens.userId, userId), isNull(accessTokens.revokedAt)))
}

/** The user a token check found, with the token's expiry as PostgreSQL text (null: never). */
export interface TokenHolderRow { id: number, username: string, role: UserRole, expiresAt: string | null }

/** The full token check, prepared once per handle: the token must be stored, unrevoked, unexpired, its user active. */
const tokenStatement = perHandle((db) =>
  db.select({ id: users.id, username: users.username, role: users.role, expiresAt: sql<string | null>`${accessTokens.expiresAt}::text` })
    .from(accessTokens).innerJoin(users, eq(users.id, accessTokens.userId))
    .where(and(
      eq(accessTokens.tokenHash, sql.placeholder('hash')),
      isNull(accessTokens.revokedAt),
      or(isNull(accessTokens.expiresAt), sql`${accessTokens.expiresAt} > ${sql.placeholder('now')}::timestamptz`),
      isNull(users.archivedAt)
    )).limit(1).prepare('esp_token_check'))

/** The active user of a stored, unrevoked token of this hash that is unexpired at `now` (ISO text). */
export async function findTokenHolder (h: Handle, tokenHash: string, now: string): Promise<TokenHolderRow | undefined> {
  const [row] = await tokenStatement(h).execute({ hash: tokenHash, now })
  return row
}

// ---- OAuth client applications

export async function insertApplication (h: Handle, values: { ownerId: number, name: string, uid: string, secretHash: string, redirectUri: string | null, scopes: string, createdAt: Date, updatedAt: Date }): Promise<ApplicationRow | undefined> {
  const [row] = await h.db.insert(oauthApplications).values(values).returning()
  return row
}

/** The application of this id when `ownerId` owns it. */
export async function findOwnedApplication (h: Handle, id: number, ownerId: number): Promise<ApplicationRow | undefined> {
  const [row] = await h.db.select().from(oauthApplications).where(and(eq(oauthApplications.id, id), eq(oauthApplications.ownerId, ownerId))).limit(1)
  return row
}

/** The owner's applications, by id. */
export async function listOwnedApplications (h: Handle, ownerId: number): Promise<ApplicationRow[]> {
  return await h.db.select().from(oauthApplications).where(eq(oauthApplications.ownerId, ownerId)).orderBy(asc(oauthApplications.id))
}

export async function updateApplicationRow (h: Handle, id: number, changes: { name?: string, redirectUri?: string | null, scopes?: string, updatedAt: Date }): Promise<ApplicationRow | undefined> {
  const [row] = await h.db.update(oauthApplications).set(changes).where(eq(oauthApplications.id, id)).returning()
  return row
}

/** Deletes the application; its tokens go with it (on delete cascade). */
export async function deleteApplicationRow (h: Handle, id: number): Promise<void> {
  await h.db.delete(oauthApplications).where(eq(oauthApplications.id, id))
}

/** The application of this client id (`uid`). */
export async function findApplicationByUid (h: Handle, uid: string): Promise<ApplicationRow | undefined> {
  const [row] = await h.db.select().from(oauthApplications).where(eq(oauthApplications.uid, uid)).limit(1)
  return row
}

// ---- password resets

/** An active account an identifier names (its e-mail or username, ignoring case). */
export async function findResetAccount (h: Handle, identifier: string): Promise<{ id: number, email: string, username: string } | undefined> {
  const [row] = await h.db.select({ id: users.id, email: users.email, username: users.username }).from(users)
    .where(and(isNull(users.archivedAt), or(sql`lower(${users.email}) = lower(${identifier})`, sql`lower(${users.username}) = lower(${identifier})`)))
    .limit(1)
  return row
}

export async function insertPasswordReset (h: Handle, values: { userId: number, tokenHash: string, expiresAt: Date, createdAt: Date }): Promise<void> {
  await h.db.insert(passwordResets).values(values)
}

/** The unused reset of this token hash that is unexpired at `now`, with its active user. */
export async function findPendingReset (h: Handle, tokenHash: string, now: Date): Promise<{ reset: PasswordResetRow, user: UserRow } | undefined> {
  const [row] = await h.db.select({ reset: passwordResets, user: users }).from(passwordResets)
    .innerJoin(users, eq(users.id, passwordResets.userId))
    .where(and(eq(passwordResets.tokenHash, tokenHash), isNull(passwordResets.usedAt), gt(passwordResets.expiresAt, now), isNull(users.archivedAt)))
    .limit(1)
  return row
}

/** Marks the reset used, only while it is still unused: false when another got there first. */
export async function useUpPasswordReset (h: Handle, id: number, now: Date): Promise<boolean> {
  const used = await h.db.update(passwordResets).set({ usedAt: now }).where(and(eq(passwordResets.id, id), isNull(passwordResets.usedAt))).returning({ id: passwordResets.id })
  return used.length > 0
}

// ---------------------------------------------------------------- the list (the list machinery's, issue 36)

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

/** A page of the active users (filters of userFilters) and the total. */
export async function listActiveUsers (h: Handle, query: ListQuery): Promise<{ rows: UserRow[], total: number }> {
  return await listPage(h, users, userFilters, query, users.id, isNull(users.archivedAt))
}
