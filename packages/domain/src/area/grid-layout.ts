// Where an interpolated grid's cells are (issue 38): square or hexagonal cells of a size in km over
// a bbox, counted in constant time (the route bounds its cost with the count before any work), and
// the buckets of the device index that keep each cell's sums to its neighbours.

/** Kilometres in a degree of latitude, for the cell sizes (the contract's figure). */
export const KM_PER_DEGREE = 111.195
export const DEG = Math.PI / 180
/** Buckets per axis of the device index: enough to visit only neighbours, few enough to stay small. */
const MAX_BUCKETS_PER_AXIS = 256
export const SQRT3 = Math.sqrt(3)

export interface GridSpec {
  bbox: { west: number, south: number, east: number, north: number }
  /** Square: the side. Hexagon: the distance between opposite edges (flat to flat). */
  cellKm: number
  shape: 'square' | 'hexagon'
  power: number
  maxDistanceKm: number
}

/** Where the grid's centres are, in degrees from the bbox's south-west corner (east unwrapped). */
export interface Layout {
  west: number
  south: number
  /** Degrees of longitude from west to east, east taken as east + 360 across the antimeridian. */
  width: number
  height: number
  /** Degrees of longitude per km at the bbox's mid latitude (cells are sized there). */
  lngPerKm: number
  colStep: number
  rowStep: number
  firstRow: number
  firstEven: number
  firstOdd: number
  rows: number
  colsEven: number
  colsOdd: number
}

/** How many of first, first + step, first + 2·step, … are at most length. */
function countAlong (length: number, first: number, step: number): number {
  if (!(length >= first)) return 0
  return Math.floor((length - first) / step) + 1
}

export function layoutOf (spec: GridSpec): Layout {
  const { west, south, east, north } = spec.bbox
  if (![west, south, east, north].every(Number.isFinite)) throw new RangeError('the bbox needs four finite numbers')
  if (!(south >= -90 && north <= 90)) throw new RangeError('latitudes must be within [-90, 90]')
  if (!(Number.isFinite(spec.cellKm) && spec.cellKm > 0)) throw new RangeError('cellKm must be a positive number')
  const width = west > east ? east + 360 - west : east - west
  const height = north - south
  const midLat = (south + north) / 2
  const lngPerKm = 1 / (KM_PER_DEGREE * Math.cos(midLat * DEG))
  const dLat = spec.cellKm / KM_PER_DEGREE
  const dLng = spec.cellKm * lngPerKm
  let rowStep: number, firstRow: number, firstEven: number, firstOdd: number
  if (spec.shape === 'hexagon') {
    // Pointy-top hexagons, cellKm between opposite (vertical) edges: centres cellKm apart along a
    // row, rows 1.5 circumradii apart, odd rows shifted half a cell west so the west edge is covered.
    rowStep = 1.5 * (spec.cellKm / SQRT3) / KM_PER_DEGREE
    firstRow = rowStep / 2
    firstEven = dLng / 2
    firstOdd = 0
  } else {
    rowStep = dLat
    firstRow = dLat / 2
    firstEven = firstOdd = dLng / 2
  }
  const rows = countAlong(height, firstRow, rowStep)
  return {
    west,
    south,
    width,
    height,
    lngPerKm,
    colStep: dLng,
    rowStep,
    firstRow,
    firstEven,
    firstOdd,
    rows,
    colsEven: countAlong(width, firstEven, dLng),
    colsOdd: countAlong(width, firstOdd, dLng)
  }
}

/**
 * Buckets along an extent, each at least the reach long; the 1e-6 margin keeps a device at exactly
 * the reach from landing two buckets away by rounding. A zero reach or extent gives one or the most.
 */
export function bucketsAlong (extent: number, reach: number): number {
  if (!(extent > 0)) return 1
  const n = Math.floor(extent / (reach * (1 + 1e-6)))
  return n >= 1 ? Math.min(MAX_BUCKETS_PER_AXIS, n) : 1
}

export const totalOf = (layout: Layout): number =>
  Math.ceil(layout.rows / 2) * layout.colsEven + Math.floor(layout.rows / 2) * layout.colsOdd

/**
 * The exact number of cells idwGrid lays out for the spec (those whose centre is inside the bbox),
 * in constant time: the route bounds its cost with it before any work.
 */
export function gridCellCount (spec: GridSpec): number {
  return totalOf(layoutOf(spec))
}
