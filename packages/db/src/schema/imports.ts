import { sql } from 'drizzle-orm'
import { check, index, integer, jsonb, pgTable, serial, text } from 'drizzle-orm/pg-core'
import { timestamps, tstz } from './columns.js'
import { devices } from './devices.js'
import { users } from './users.js'

export const importStates = ['queued', 'running', 'done', 'failed'] as const
export type ImportState = (typeof importStates)[number]

/**
 * A historical CSV import (an SD-card file): validated whole by the api, stored by a job through
 * the readings write path. The file travels in `csv` (the api and the exporter may run on
 * different hosts) and is dropped once the job is done.
 */
export const readingImports = pgTable('reading_imports', {
  id: serial().primaryKey(),
  deviceId: integer().notNull().references(() => devices.id, { onDelete: 'cascade' }),
  userId: integer().references(() => users.id, { onDelete: 'set null' }),
  state: text().$type<ImportState>().notNull().default('queued'),
  rowsTotal: integer().notNull(),
  valuesTotal: integer().notNull(),
  rowsDone: integer().notNull().default(0),
  stored: integer().notNull().default(0),
  duplicates: integer().notNull().default(0),
  /** values of sensors the catalogue does not know, left out: `{count, unknown_sensors, items}` (domain SkippedView) */
  skipped: jsonb(),
  error: text(),
  csv: text(),
  finishedAt: tstz(),
  ...timestamps
}, (t) => [
  index('reading_imports_device_idx').on(t.deviceId),
  check('reading_imports_state_check', sql`${t.state} in ('queued', 'running', 'done', 'failed')`)
])
