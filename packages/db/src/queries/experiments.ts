import { and, asc, eq, inArray, isNull } from 'drizzle-orm'
import type { Handle } from '../client.js'
import { devices } from '../schema/devices.js'
import { experimentDevices, experiments } from '../schema/experiments.js'
import { type FilterSpec, type ListQuery, listPage } from './lists.js'
import { visibleDrizzle, type Visibility } from './visibility.js'

export type ExperimentRow = typeof experiments.$inferSelect
/** What a write sets on an experiment's row. */
export type ExperimentValues = Partial<Pick<typeof experiments.$inferInsert, 'name' | 'description' | 'isTest' | 'startsAt' | 'endsAt'>>

export const experimentFilters: FilterSpec = {
  id: { column: experiments.id, type: 'integer' },
  name: { column: experiments.name, type: 'text' },
  description: { column: experiments.description, type: 'text' },
  owner_id: { column: experiments.ownerId, type: 'integer' },
  is_test: { column: experiments.isTest, type: 'boolean' },
  starts_at: { column: experiments.startsAt, type: 'timestamp' },
  ends_at: { column: experiments.endsAt, type: 'timestamp' },
  created_at: { column: experiments.createdAt, type: 'timestamp' },
  updated_at: { column: experiments.updatedAt, type: 'timestamp' }
}

/** A page of experiments (filters of experimentFilters) and the total. */
export async function listExperiments (h: Handle, query: ListQuery): Promise<{ rows: ExperimentRow[], total: number }> {
  return await listPage(h, experiments, experimentFilters, query, experiments.id)
}

/** The experiment with this id, or undefined. */
export async function experimentById (h: Handle, id: number): Promise<ExperimentRow | undefined> {
  const [row] = await h.db.select().from(experiments).where(eq(experiments.id, id)).limit(1)
  return row
}

/** The active devices of these experiments that the viewer may see, by device id: (experiment, device) pairs. */
export async function visibleExperimentDevices (h: Handle, experimentIds: number[], v: Visibility): Promise<Array<{ experimentId: number, deviceId: number }>> {
  return await h.db.select({ experimentId: experimentDevices.experimentId, deviceId: experimentDevices.deviceId }).from(experimentDevices)
    .innerJoin(devices, eq(devices.id, experimentDevices.deviceId))
    .where(and(inArray(experimentDevices.experimentId, experimentIds), isNull(devices.archivedAt), visibleDrizzle({ isPrivate: devices.isPrivate, ownerId: devices.ownerId }, v)))
    .orderBy(asc(experimentDevices.deviceId))
}

/** Who owns the active devices with these ids, and whether they are private (those found). */
export async function activeDevicesPrivacy (h: Handle, ids: number[]): Promise<Array<{ id: number, ownerId: number, isPrivate: boolean }>> {
  return await h.db.select({ id: devices.id, ownerId: devices.ownerId, isPrivate: devices.isPrivate }).from(devices)
    .where(and(inArray(devices.id, ids), isNull(devices.archivedAt)))
}

/** A new experiment's row. */
export async function insertExperiment (h: Handle, values: typeof experiments.$inferInsert): Promise<ExperimentRow | undefined> {
  const [row] = await h.db.insert(experiments).values(values).returning()
  return row
}

/** Changes an experiment's row; undefined when there is none. */
export async function updateExperimentRow (h: Handle, id: number, values: ExperimentValues & { updatedAt: Date }): Promise<ExperimentRow | undefined> {
  const [row] = await h.db.update(experiments).set(values).where(eq(experiments.id, id)).returning()
  return row
}

/** The experiment's devices become exactly these. */
export async function replaceExperimentDevices (h: Handle, experimentId: number, deviceIds: number[]): Promise<void> {
  await h.db.delete(experimentDevices).where(eq(experimentDevices.experimentId, experimentId))
  if (deviceIds.length > 0) await h.db.insert(experimentDevices).values(deviceIds.map((deviceId) => ({ experimentId, deviceId })))
}

export async function deleteExperimentRow (h: Handle, id: number): Promise<void> {
  await h.db.delete(experiments).where(eq(experiments.id, id))
}
