import {
  activeDevicesPrivacy, deleteExperimentRow, experimentById, type ExperimentRow, type Handle, inTransaction, insertExperiment, replaceExperimentDevices,
  updateExperimentRow, visibleExperimentDevices
} from '@esp/db'
import { errors } from '../errors.js'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { canSee, visibility } from '../devices/device-access.js'
import { parseTimeParam } from '../readings/time-params.js'
import { formatTimestamp } from '../time.js'
import { asBody, BodyReader } from '../validation/body-reader.js'
import { recordIdOr404 } from '../validation/record-id.js'

// The list's field map and page are packages/db's (queries/experiments.ts).
export { experimentFilters, listExperiments } from '@esp/db'

/** Active when started (or no start) and not ended (or no end). */
export const isActive = (e: Pick<ExperimentRow, 'startsAt' | 'endsAt'>, now: Date): boolean =>
  (e.startsAt === null || now >= e.startsAt) && (e.endsAt === null || now <= e.endsAt)

/** The device ids of many experiments, only those the caller may see, in one query. */
async function deviceIdsOf (h: Handle, ids: number[], viewer: Viewer | null): Promise<Map<number, number[]>> {
  const result = new Map<number, number[]>(ids.map((id) => [id, []]))
  if (ids.length === 0) return result
  const rows = await visibleExperimentDevices(h, ids, visibility(viewer))
  for (const row of rows) result.get(row.experimentId)?.push(row.deviceId)
  return result
}

export async function presentExperiments (h: Handle, rows: ExperimentRow[], viewer: Viewer | null, now: Date) {
  const ids = await deviceIdsOf(h, rows.map((e) => e.id), viewer)
  return rows.map((e) => ({
    id: e.id,
    name: e.name,
    description: e.description,
    owner_id: e.ownerId,
    active: isActive(e, now),
    is_test: e.isTest,
    starts_at: formatTimestamp(e.startsAt),
    ends_at: formatTimestamp(e.endsAt),
    device_ids: ids.get(e.id) ?? [],
    created_at: formatTimestamp(e.createdAt),
    updated_at: formatTimestamp(e.updatedAt)
  }))
}

export async function findExperiment (h: Handle, raw: string): Promise<ExperimentRow> {
  const id = recordIdOr404('Experiment', raw)
  const row = await experimentById(h, id)
  if (row === undefined) throw errors.notFound('Experiment', id)
  return row
}

interface ExperimentInput { name?: string, description?: string | null, isTest?: boolean, startsAt?: Date | null, endsAt?: Date | null, deviceIds?: number[] }

async function parse (h: Handle, raw: unknown, viewer: Viewer, existing: ExperimentRow | undefined): Promise<ExperimentInput> {
  const r = new BodyReader(asBody(raw), existing === undefined)
  const body = r.body
  const input: ExperimentInput = {}
  const name = r.text('name', { max: 255, required: true })
  if (typeof name === 'string') input.name = name
  const description = r.text('description')
  if (description !== undefined) input.description = description
  const isTest = r.bool('is_test')
  if (isTest !== undefined) input.isTest = isTest
  for (const [field, key] of [['starts_at', 'startsAt'], ['ends_at', 'endsAt']] as const) {
    const value = body[field]
    if (value === undefined) continue
    if (value === null || value === '') { input[key] = null; continue }
    try {
      input[key] = parseTimeParam('from', String(value)) ?? null
    } catch {
      r.add(field, 'is not a valid ISO8601 date or time')
    }
  }
  const startsAt = input.startsAt !== undefined ? input.startsAt : existing?.startsAt ?? null
  const endsAt = input.endsAt !== undefined ? input.endsAt : existing?.endsAt ?? null
  if (startsAt !== null && endsAt !== null && endsAt < startsAt) r.add('ends_at', 'is before starts_at')
  const ids = r.ids(['device_ids', 'device_ids[]'], 'must be device ids')
  if (ids !== undefined) {
    const unique = [...new Set(ids)]
    const found = unique.length === 0
      ? []
      : await activeDevicesPrivacy(h, unique)
    // A private device of someone else is reported as unknown: its existence is not the caller's to learn.
    const usable = found.filter((d) => canSee(viewer, d))
    const missing = unique.filter((id) => !usable.some((d) => d.id === id))
    if (missing.length > 0) r.add('device_ids', `unknown devices: ${missing.join(', ')}`)
    input.deviceIds = unique
  }
  r.check()
  return input
}

async function writeDevices (tx: Handle, experimentId: number, ids: number[] | undefined): Promise<void> {
  if (ids === undefined) return
  await replaceExperimentDevices(tx, experimentId, ids)
}

/** Any logged-in user creates an experiment and owns it. */
export async function createExperiment (h: Handle, raw: unknown, viewer: Viewer | null, now: Date): Promise<ExperimentRow> {
  if (viewer === null) throw errors.unauthorized()
  const input = await parse(h, raw, viewer, undefined)
  return await inTransaction(h, async (tx) => {
    const row = await insertExperiment(tx, {
      ownerId: viewer.id,
      name: input.name ?? '',
      description: input.description ?? null,
      isTest: input.isTest ?? false,
      startsAt: input.startsAt ?? null,
      endsAt: input.endsAt ?? null,
      createdAt: now,
      updatedAt: now
    })
    if (row === undefined) throw new Error('insert returned no row')
    await writeDevices(tx, row.id, input.deviceIds)
    return row
  })
}

function assertOwner (viewer: Viewer | null, row: ExperimentRow): asserts viewer is Viewer {
  if (viewer === null) throw errors.unauthorized()
  if (viewer.id !== row.ownerId && !isAdmin(viewer)) throw errors.forbidden()
}

export async function updateExperiment (h: Handle, row: ExperimentRow, raw: unknown, viewer: Viewer | null, now: Date): Promise<ExperimentRow> {
  assertOwner(viewer, row)
  const input = await parse(h, raw, viewer, row)
  return await inTransaction(h, async (tx) => {
    const updated = await updateExperimentRow(tx, row.id, {
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.isTest !== undefined ? { isTest: input.isTest } : {}),
      ...(input.startsAt !== undefined ? { startsAt: input.startsAt } : {}),
      ...(input.endsAt !== undefined ? { endsAt: input.endsAt } : {}),
      updatedAt: now
    })
    if (updated === undefined) throw errors.notFound('Experiment', row.id)
    await writeDevices(tx, row.id, input.deviceIds)
    return updated
  })
}

export async function deleteExperiment (h: Handle, row: ExperimentRow, viewer: Viewer | null): Promise<void> {
  assertOwner(viewer, row)
  await deleteExperimentRow(h, row.id)
}
