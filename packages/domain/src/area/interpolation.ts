import type { Viewer } from '../auth/viewer.js'
import { errors } from '../errors.js'
import { formatTimestamp } from '../time.js'
import { type AreaContext, type AreaParams, areaValues, measuredFields } from './area-values.js'
import { gridFeaturesJson } from './grid-json.js'
import { gridCellCount, type GridSpec } from './grid-layout.js'
import { idwGrid, type IdwPoint } from './idw.js'
import { legendClasses } from './legend.js'

/*
 * GET /v0/readings/interpolation: an inverse-distance-weighted surface over a box, from the
 * devices' own window values, as GeoJSON. Cells out of reach of every device stay empty.
 */

export interface InterpolationParams extends AreaParams {
  cell_size?: string | undefined
  cell_shape?: string | undefined
  power?: string | undefined
  max_distance?: string | undefined
}

/** The most cells a grid has (counted from its box and cell size before any work). */
export const MAX_GRID_CELLS = 40_000
/** The most time steps (windows) one grid answers. */
export const MAX_GRID_STEPS = 24
export const DEFAULT_GRID_ROLLUP = '1d'

function positive (name: string, text: string | undefined, fallback: number, max: number): number {
  if (text === undefined || text.trim() === '') return fallback
  const value = /^\d{1,6}(\.\d{1,9})?$/.test(text.trim()) ? Number(text) : NaN
  if (!(value > 0 && value <= max)) throw errors.badRequest(`${name} must be a number above 0 and at most ${max}`, { [name]: [`must be above 0 and at most ${max}`] })
  return value
}

/** The grid asked for, bounded before any work. */
export function parseGrid (params: InterpolationParams): GridSpec {
  if ((params.bbox ?? '').trim() === '') throw errors.parameterMissing(['bbox'])
  const shape = (params.cell_shape ?? '').trim() === '' ? 'square' : params.cell_shape
  if (shape !== 'square' && shape !== 'hexagon') throw errors.badRequest('cell_shape must be square or hexagon', { cell_shape: ['is not included in the list'] })
  const [west, south, east, north] = (params.bbox ?? '').split(',').map(Number) as [number, number, number, number]
  const spec: GridSpec = {
    bbox: { west, south, east, north },
    cellKm: positive('cell_size', params.cell_size, 1, 1000),
    shape,
    power: positive('power', params.power, 2, 10),
    maxDistanceKm: positive('max_distance', params.max_distance, 5, 5000)
  }
  const cells = gridCellCount(spec)
  if (cells > MAX_GRID_CELLS) {
    throw errors.badRequest(`This grid has ${cells} cells; at most ${MAX_GRID_CELLS} are answered. Ask for a larger cell_size or a smaller bbox.`, { cell_size: [`gives ${cells} cells, more than ${MAX_GRID_CELLS}`] })
  }
  return spec
}

/** GET /v0/readings/interpolation, as GeoJSON bytes. */
export async function areaInterpolation (ctx: AreaContext, viewer: Viewer | null, params: InterpolationParams): Promise<Buffer> {
  const rollupGiven = (params.rollup ?? '').trim() !== ''
  const asked = { ...params, rollup: rollupGiven ? params.rollup : DEFAULT_GRID_ROLLUP }
  // The box is both the grid and the devices' selection: parsed (and refused) by the selection first.
  const spec = parseGrid(params)
  const area = await areaValues(ctx, viewer, asked, { maxWindows: MAX_GRID_STEPS })
  const steps = area.windows.length
  const located = area.devices.flatMap((device, d) => device.latitude === null || device.longitude === null ? [] : [{ d, point: { id: device.deviceId, lat: device.latitude, lng: device.longitude } }])
  const points: IdwPoint[] = located.map((l) => l.point)
  const values = new Float64Array(points.length * steps)
  located.forEach((l, p) => { values.set(area.values.subarray(l.d * steps, (l.d + 1) * steps), p * steps) })
  // No step holds a value (no device in the box has one in the range): no cell either.
  const grid = steps === 0 ? null : idwGrid(points, values, steps, spec)
  const classes = grid === null ? [] : legendClasses(grid.values)
  const devices = points.map((point, p) => {
    const own = Array.from(values.subarray(p * steps, (p + 1) * steps), (v) => Number.isNaN(v) ? null : v)
    return { id: point.id, latitude: point.lat, longitude: point.lng, values: own }
  }).filter((device) => device.values.some((v) => v !== null))
  const head = JSON.stringify({
    type: 'FeatureCollection',
    bbox: [spec.bbox.west, spec.bbox.south, spec.bbox.east, spec.bbox.north],
    ...measuredFields(area.measured),
    function: area.fn,
    rollup: area.rollup.text,
    timezone: area.rollup.zone?.name ?? 'UTC',
    from: formatTimestamp(area.from),
    to: formatTimestamp(area.to),
    cell_size: spec.cellKm,
    cell_shape: spec.shape,
    power: spec.power,
    max_distance: spec.maxDistanceKm,
    steps: area.windows.map((start) => formatTimestamp(new Date(start))),
    devices,
    classes
  })
  return Buffer.from(`${head.slice(0, -1)},"features":${grid === null ? '[]' : gridFeaturesJson(grid, classes)}}`)
}
