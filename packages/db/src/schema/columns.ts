import { sql } from 'drizzle-orm'
import { bigint, pgSequence, timestamp, uuid } from 'drizzle-orm/pg-core'

/** Every timestamp is timestamptz: the API speaks UTC only. */
export const tstz = () => timestamp({ withTimezone: true, mode: 'date' })

export const timestamps = {
  createdAt: tstz().notNull().defaultNow(),
  updatedAt: tstz().notNull().defaultNow()
}

export const publicUuid = () => uuid().notNull().unique().default(sql`gen_random_uuid()`)

/**
 * Revisions of representations (DESIGN.md, Read): one sequence for devices and users, so that a
 * revision names one state of one row. Triggers (migration 0009) take a new one in the writing
 * transaction whenever anything a representation shows changes.
 */
export const representationRevision = pgSequence('representation_revision')

export const revision = () => bigint({ mode: 'number' }).notNull().default(sql`nextval('representation_revision')`)
