import { sql } from 'drizzle-orm'
import { bigint, check, index, integer, pgTable, serial, text, uniqueIndex } from 'drizzle-orm/pg-core'
import { publicUuid, revision, timestamps, tstz } from './columns.js'

export const userRoles = ['citizen', 'researcher', 'admin'] as const
export type UserRole = (typeof userRoles)[number]

export const users = pgTable('users', {
  id: serial().primaryKey(),
  uuid: publicUuid(),
  username: text().notNull(),
  email: text().notNull(),
  passwordHash: text(),
  role: text().$type<UserRole>().notNull().default('citizen'),
  firstName: text(),
  lastName: text(),
  url: text(),
  city: text(),
  countryCode: text(),
  /** storage key of the uploaded profile picture under $DATA_DIR/uploads */
  profilePicture: text(),
  /** researchers and admins only (contract: data forwarding) */
  forwardingToken: text().unique(),
  forwardingUsername: text().unique(),
  legacyApiKey: text().unique(),
  archivedAt: tstz(),
  /** bumped by triggers when anything the representation shows changes (migration 0009) */
  revision: revision(),
  ...timestamps
}, (t) => [
  // Case-insensitive uniqueness: logins match lower(username) or lower(email), so two accounts
  // differing only in case would make a login ambiguous.
  uniqueIndex('users_username_lower_key').on(sql`lower(${t.username})`),
  uniqueIndex('users_email_lower_key').on(sql`lower(${t.email})`),
  check('users_role_check', sql`${t.role} in ('citizen', 'researcher', 'admin')`)
])

/** Access tokens are stored hashed so that a leaked table grants nothing; revocation sets revoked_at. */
export const accessTokens = pgTable('access_tokens', {
  id: serial().primaryKey(),
  userId: integer().notNull().references(() => users.id, { onDelete: 'cascade' }),
  applicationId: integer().references(() => oauthApplications.id, { onDelete: 'cascade' }),
  tokenHash: text().notNull().unique(),
  expiresAt: tstz(),
  revokedAt: tstz(),
  lastUsedAt: tstz(),
  createdAt: tstz().notNull().defaultNow()
}, (t) => [index('access_tokens_user_idx').on(t.userId)])

/** The older form's OAuth client applications (password grant). */
export const oauthApplications = pgTable('oauth_applications', {
  id: serial().primaryKey(),
  ownerId: integer().notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text().notNull(),
  uid: text().notNull().unique(),
  secretHash: text().notNull(),
  redirectUri: text(),
  scopes: text().notNull().default(''),
  ...timestamps
})

export const passwordResets = pgTable('password_resets', {
  id: serial().primaryKey(),
  userId: integer().notNull().references(() => users.id, { onDelete: 'cascade' }),
  tokenHash: text().notNull().unique(),
  expiresAt: tstz().notNull(),
  usedAt: tstz(),
  createdAt: tstz().notNull().defaultNow()
}, (t) => [index('password_resets_user_idx').on(t.userId)])

/**
 * One row, bumped by every transaction that revokes or changes credentials (password change or
 * reset, a deleted or archived user, a role or username change, a revoked token, a deleted OAuth
 * application). Processes that remember verified credentials read it before trusting their
 * memory, so a revocation holds everywhere once its transaction committed
 * (domain/src/auth/credential-cache.ts).
 */
export const authGeneration = pgTable('auth_generation', {
  id: integer().primaryKey().default(1),
  value: bigint({ mode: 'number' }).notNull().default(0)
}, (t) => [check('auth_generation_one_row', sql`${t.id} = 1`)])
