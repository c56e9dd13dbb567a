import { sql } from 'drizzle-orm'
import { timestamp, uuid } from 'drizzle-orm/pg-core'

/** Every timestamp is timestamptz: the API speaks UTC only. */
export const tstz = () => timestamp({ withTimezone: true, mode: 'date' })

export const timestamps = {
  createdAt: tstz().notNull().defaultNow(),
  updatedAt: tstz().notNull().defaultNow()
}

export const publicUuid = () => uuid().notNull().unique().default(sql`gen_random_uuid()`)
