import { type ExportSelection, exportPairs, type Handle, type SelectedPair, visibleActiveDeviceIds } from '@esp/db'
import type { Viewer } from '../auth/viewer.js'
import { visibility } from '../devices/device-access.js'
import { errors } from '../errors.js'
import { listParam, recordId } from '../validation/record-id.js'
import type { ExportParams } from './export-params.js'

/** The export across devices: which devices, besides what every export takes. */
export interface DevicesExportParams extends ExportParams {
  /** ids separated by commas */
  device_ids?: string | undefined
  /** tag names separated by |: devices with any of them (as on the devices list) */
  with_tags?: string | undefined
  /** west,south,east,north in degrees; west above east crosses the antimeridian */
  bbox?: string | undefined
  /** indoor or outdoor (a device without one is outdoor) */
  exposure?: string | undefined
}

/** the most ids one export names: beyond, a tag or a box says it better (and a URL gets long) */
export const MAX_EXPORT_DEVICE_IDS = 1000

type Bbox = NonNullable<ExportSelection['bbox']>

/** Which devices an export across devices reads; every part given narrows it. */
export type DeviceSelection = ExportSelection

const BBOX_HINT = 'bbox must be "west,south,east,north" in degrees, e.g. bbox=2.05,41.32,2.23,41.47'

function parseBbox (text: string): Bbox {
  const parts = text.split(',').map((part) => part.trim())
  const numbers = parts.map((part) => /^-?\d+(\.\d+)?$/.test(part) ? Number(part) : NaN)
  const [west = NaN, south = NaN, east = NaN, north = NaN] = numbers
  if (parts.length !== 4 || numbers.some((n) => Number.isNaN(n))) throw errors.badRequest(BBOX_HINT, { bbox: ['must be four numbers: west,south,east,north'] })
  if (Math.abs(west) > 180 || Math.abs(east) > 180 || Math.abs(south) > 90 || Math.abs(north) > 90) {
    throw errors.badRequest(`${BBOX_HINT}; longitudes lie within ±180, latitudes within ±90`, { bbox: ['is outside the globe'] })
  }
  if (south > north) throw errors.badRequest(`${BBOX_HINT}; south must not be above north`, { bbox: ['has south above north'] })
  return { west, south, east, north }
}

/** The devices an export across devices (or an area request) names: at least one of device_ids, with_tags and bbox, and exposure narrows them. */
export function parseDeviceSelection (params: DevicesExportParams): DeviceSelection {
  const listed = listParam('device_ids', params.device_ids, MAX_EXPORT_DEVICE_IDS, 'devices')
  const ids = listed.map((item) => {
    const id = recordId(item)
    if (id === null) throw errors.badRequest('device_ids must be device ids separated by commas', { device_ids: ['must be integers'] })
    return id
  })
  const tags = (params.with_tags ?? '').split('|').map((tag) => tag.trim()).filter((tag) => tag !== '')
  const bbox = (params.bbox ?? '').trim() === '' ? null : parseBbox(params.bbox ?? '')
  const exposure = (params.exposure ?? '').trim()
  if (exposure !== '' && exposure !== 'indoor' && exposure !== 'outdoor') throw errors.badRequest('exposure must be indoor or outdoor', { exposure: ['is not included in the list'] })
  if (ids.length === 0 && tags.length === 0 && bbox === null) {
    throw errors.badRequest('name the devices to export: device_ids, with_tags or bbox', { device_ids: ['device_ids, with_tags or bbox is required'] })
  }
  return { ids: ids.length === 0 ? null : ids, tags: tags.length === 0 ? null : tags, bbox, exposure: exposure === '' ? null : exposure }
}

/**
 * The (device, sensor) pairs of the selection with a reading in [from, until), with the first and
 * last reading of each there, in device then sensor order (exportPairs). Only active devices the
 * viewer may see: a device named by id that is not one is the 404 of a missing device, as its own
 * export answers.
 */
export async function selectedPairs (database: Handle, viewer: Viewer | null, selection: DeviceSelection, range: { sensorId: number | null, from: Date | null, until: Date | null }): Promise<SelectedPair[]> {
  const v = visibility(viewer)
  if (selection.ids !== null) {
    const seen = new Set(await visibleActiveDeviceIds(database, selection.ids, v))
    const missing = selection.ids.find((id) => !seen.has(id))
    if (missing !== undefined) throw errors.notFound('Device', missing)
  }
  return await exportPairs(database, v, selection, range)
}
