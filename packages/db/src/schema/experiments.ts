import { boolean, index, integer, pgTable, primaryKey, serial, text } from 'drizzle-orm/pg-core'
import { timestamps, tstz } from './columns.js'
import { devices } from './devices.js'
import { users } from './users.js'

export const experiments = pgTable('experiments', {
  id: serial().primaryKey(),
  ownerId: integer().notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text().notNull(),
  description: text(),
  isTest: boolean().notNull().default(false),
  startsAt: tstz(),
  endsAt: tstz(),
  ...timestamps
}, (t) => [index('experiments_owner_idx').on(t.ownerId)])

export const experimentDevices = pgTable('experiment_devices', {
  experimentId: integer().notNull().references(() => experiments.id, { onDelete: 'cascade' }),
  deviceId: integer().notNull().references(() => devices.id, { onDelete: 'cascade' })
}, (t) => [primaryKey({ columns: [t.experimentId, t.deviceId] }), index('experiment_devices_device_idx').on(t.deviceId)])
