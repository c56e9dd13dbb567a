import { Buffer } from 'node:buffer'

// Interpolated grids for GET /v0/readings/interpolation (issue 38): the cells of a bbox, each
// cell's inverse-distance-weighted value per time step, the legend classes and the GeoJSON text of
// the features. Pure and synchronous; columnar typed arrays so that 40,000 cells × 24 steps cost no
// object per cell.
//
// Distances are equirectangular on a sphere (dx = Δlng·cos(mean lat), dy = Δlat, × R): within a
// fraction of a percent of the great circle at city to region scale (tens of km), which is what
// max_distance is for, and cheap enough to run for every (cell, device) pair. It is not meant for
// continent-sized distances.

/** Mean Earth radius (IUGG), the sphere of every distance here. */
const EARTH_RADIUS_KM = 6371.0088
/** Kilometres in a degree of latitude, for the cell sizes (the contract's figure). */
const KM_PER_DEGREE = 111.195
const DEG = Math.PI / 180
/** A device closer than this to a cell's centre gives the cell its value exactly (no 1/0). */
const EXACT_KM = 1e-9
/** A safety net against a runaway allocation; the route itself refuses more than 40,000 cells. */
const MAX_GRID_CELLS = 1_000_000
/** Buckets per axis of the device index: enough to visit only neighbours, few enough to stay small. */
const MAX_BUCKETS_PER_AXIS = 256
const SQRT3 = Math.sqrt(3)

export interface GridSpec {
  bbox: { west: number, south: number, east: number, north: number }
  /** Square: the side. Hexagon: the distance between opposite edges (flat to flat). */
  cellKm: number
  shape: 'square' | 'hexagon'
  power: number
  maxDistanceKm: number
}

export interface IdwPoint { id: number, lat: number, lng: number }

/**
 * The kept cells (those with a value in at least one step), south to north then west to east,
 * as columns.
 */
export interface IdwGrid {
  /** Kept cells. */
  readonly cells: number
  readonly steps: number
  /** Positions per ring: 5 for squares, 7 for hexagons (closed rings). */
  readonly ringPositions: number
  /** cells × ringPositions × [lng, lat], counter-clockwise closed rings (RFC 7946 §3.1.6). */
  readonly rings: Float64Array
  /** cells × [lng, lat] of each cell's centre, longitudes in [-180, 180]. */
  readonly centres: Float64Array
  /** Each kept cell's index among all the grid's cells (gridCellCount of them, in the same order). */
  readonly cellIndex: Uint32Array
  /** cells × steps, NaN where no device with a value in that step is within reach. */
  readonly values: Float64Array
}

/** Where the grid's centres are, in degrees from the bbox's south-west corner (east unwrapped). */
interface Layout {
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

function layoutOf (spec: GridSpec): Layout {
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
function bucketsAlong (extent: number, reach: number): number {
  if (!(extent > 0)) return 1
  const n = Math.floor(extent / (reach * (1 + 1e-6)))
  return n >= 1 ? Math.min(MAX_BUCKETS_PER_AXIS, n) : 1
}

const totalOf = (layout: Layout): number =>
  Math.ceil(layout.rows / 2) * layout.colsEven + Math.floor(layout.rows / 2) * layout.colsOdd

/**
 * The exact number of cells idwGrid lays out for the spec (those whose centre is inside the bbox),
 * in constant time: the route bounds its cost with it before any work.
 */
export function gridCellCount (spec: GridSpec): number {
  return totalOf(layoutOf(spec))
}

interface SumsInput {
  /** Bucket b's devices are starts[b] .. starts[b + 1] - 1 of the sorted arrays. */
  starts: Int32Array
  nbx: number
  lng: Float64Array
  /** devices × steps, NaN for no value. */
  values: Float64Array
  /** Per device, for the current row: radians per degree of Δlng, and Δlat² in radians². */
  rowScale: Float64Array
  rowDy2: Float64Array
  steps: number
  reach2: number
  exact2: number
  power: number
  wrapAll: boolean
}

/**
 * A cell's weighted sums over the devices in its buckets, then its values. A small class of its
 * own: the optimising compiler takes it up after a few cells, where one large function stayed in
 * slow code for tens of milliseconds on a busy machine while it compiled.
 */
class CellSums {
  readonly rowScale: Float64Array
  readonly rowDy2: Float64Array
  private readonly input: SumsInput
  private readonly num: Float64Array
  private readonly den: Float64Array
  private readonly lo: Float64Array
  private readonly hi: Float64Array
  private readonly exactSum: Float64Array
  private readonly exactCount: Float64Array
  private exact = false

  constructor (input: SumsInput) {
    this.input = input
    this.rowScale = input.rowScale
    this.rowDy2 = input.rowDy2
    this.num = new Float64Array(input.steps)
    this.den = new Float64Array(input.steps)
    this.lo = new Float64Array(input.steps)
    this.hi = new Float64Array(input.steps)
    this.exactSum = new Float64Array(input.steps)
    this.exactCount = new Float64Array(input.steps)
  }

  /** Sums over the devices of buckets [bxLo, bxHi] × [byLo, byHi] within reach of (lng, the row). */
  sum (lng: number, byLo: number, byHi: number, bxLo: number, bxHi: number): void {
    const { starts, nbx, values, steps, reach2, exact2, power, wrapAll } = this.input
    const pointLng = this.input.lng
    const { rowScale, rowDy2, num, den, lo, hi } = this
    const squared = power === 2
    const halfPower = -power / 2
    const one = steps === 1
    num.fill(0)
    den.fill(0)
    lo.fill(Infinity)
    hi.fill(-Infinity)
    let num1 = 0
    let den1 = 0
    let lo1 = Infinity
    let hi1 = -Infinity
    this.exact = false
    for (let row = byLo; row <= byHi; row++) {
      // Neighbouring buckets of one row are contiguous in the sorted devices.
      const end = starts[row * nbx + bxHi + 1] as number
      for (let j = starts[row * nbx + bxLo] as number; j < end; j++) {
        let dl = lng - (pointLng[j] as number)
        // Bucketed, a device more than 180° away is beyond reach either way round: no wrapping.
        if (wrapAll) {
          if (dl > 180) dl -= 360
          else if (dl <= -180) dl += 360
        }
        const dx = dl * (rowScale[j] as number)
        const d2 = dx * dx + (rowDy2[j] as number)
        if (d2 > reach2) continue
        if (d2 < exact2) {
          this.addExact(j)
          continue
        }
        // Distances in radians: the radius cancels out of the weights' ratio.
        const w = squared ? 1 / d2 : Math.pow(d2, halfPower)
        if (one) {
          // A device indexed for a single step has a value there: no test, sums in registers.
          const v = values[j] as number
          num1 += w * v
          den1 += w
          if (v < lo1) lo1 = v
          if (v > hi1) hi1 = v
        } else {
          const base = j * steps
          for (let s = 0; s < steps; s++) {
            const v = values[base + s] as number
            if (Number.isNaN(v)) continue
            num[s] = (num[s] as number) + w * v
            den[s] = (den[s] as number) + w
            if (v < (lo[s] as number)) lo[s] = v
            if (v > (hi[s] as number)) hi[s] = v
          }
        }
      }
    }
    if (one) { num[0] = num1; den[0] = den1; lo[0] = lo1; hi[0] = hi1 }
  }

  private addExact (j: number): void {
    const { values, steps } = this.input
    if (!this.exact) { this.exact = true; this.exactSum.fill(0); this.exactCount.fill(0) }
    for (let s = 0; s < steps; s++) {
      const v = values[j * steps + s] as number
      if (Number.isNaN(v)) continue
      this.exactSum[s] = (this.exactSum[s] as number) + v
      this.exactCount[s] = (this.exactCount[s] as number) + 1
    }
  }

  /** Writes the cell's values per step at out[at…]; whether any is a number. */
  valuesInto (out: Float64Array, at: number): boolean {
    const { num, den, lo, hi, exactSum, exactCount, exact } = this
    let any = false
    for (let s = 0; s < num.length; s++) {
      // A weighted mean lies between its values; rounding could step out (one device's 5 as
      // 4.999999999999999), so it is held to them.
      const value = exact && (exactCount[s] as number) > 0
        ? (exactSum[s] as number) / (exactCount[s] as number)
        : (den[s] as number) > 0
            ? Math.min(hi[s] as number, Math.max(lo[s] as number, (num[s] as number) / (den[s] as number)))
            : NaN
      out[at + s] = value
      if (!Number.isNaN(value)) any = true
    }
    return any
  }
}

/**
 * The inverse-distance-weighted grid: for each cell and step, sum(v/d^p) / sum(1/d^p) over the
 * devices with a value in that step within maxDistanceKm of the cell's centre. `values` holds
 * points.length × steps numbers, values[p * steps + s]; NaN (or any non-finite number) is no value.
 * Devices at one spot closer than 1e-9 km to a centre give it their value (their mean if several).
 */
export function idwGrid (points: readonly IdwPoint[], values: Float64Array, steps: number, spec: GridSpec): IdwGrid {
  if (!(Number.isInteger(steps) && steps >= 1)) throw new RangeError('steps must be a positive integer')
  if (values.length !== points.length * steps) throw new RangeError('values must hold points.length × steps numbers')
  if (!(Number.isFinite(spec.power) && spec.power > 0)) throw new RangeError('power must be a positive number')
  if (!(Number.isFinite(spec.maxDistanceKm) && spec.maxDistanceKm >= 0)) throw new RangeError('maxDistanceKm must be a finite number ≥ 0')
  const layout = layoutOf(spec)
  const total = totalOf(layout)
  if (total > MAX_GRID_CELLS) throw new RangeError(`a grid of ${total} cells is too large`)
  const { west, south, colStep, rowStep, firstRow, firstEven, firstOdd, rows, colsEven, colsOdd } = layout
  const east = west + layout.width
  const north = south + layout.height

  // The device index: buckets at least the reach wide (in both degrees), so a cell only looks at
  // the 3 × 3 buckets around its own. The reach in longitude is taken at the highest latitude a
  // device within reach can have, where a degree of longitude is shortest.
  const reachLat = spec.maxDistanceKm / (EARTH_RADIUS_KM * DEG)
  const extSouth = south - reachLat
  const extNorth = north + reachLat
  const cosMin = Math.cos(Math.min(90, Math.max(Math.abs(extSouth), Math.abs(extNorth))) * DEG)
  const reachLng = cosMin > 1e-12 ? reachLat / cosMin : Infinity
  const extWest = west - reachLng
  const extEast = east + reachLng
  // When the reach goes round the world, longitudes are not bucketed: every device is a neighbour.
  const wrapAll = !(extEast - extWest < 360)
  const nby = bucketsAlong(extNorth - extSouth, reachLat)
  const nbx = wrapAll ? 1 : bucketsAlong(extEast - extWest, reachLng)
  const bucketHeight = extNorth > extSouth ? (extNorth - extSouth) / nby : 1
  const bucketWidth = wrapAll ? Infinity : extEast > extWest ? (extEast - extWest) / nbx : 1

  const n = points.length
  const bucketOf = new Int32Array(n).fill(-1)
  const pointLng = new Float64Array(n)
  const starts = new Int32Array(nbx * nby + 1)
  for (let p = 0; p < n; p++) {
    const point = points[p] as IdwPoint
    const lat = point.lat
    if (!(lat >= extSouth && lat <= extNorth) || !Number.isFinite(point.lng)) continue
    let hasValue = false
    for (let s = 0; s < steps; s++) {
      const v = values[p * steps + s] as number
      if (v - v === 0) { hasValue = true; break }
    }
    if (!hasValue) continue
    // The one copy of the longitude (±360) that can be inside the reach of the unwrapped bbox.
    let lng = point.lng
    if (!wrapAll) {
      lng += 360 * Math.ceil((extWest - lng) / 360)
      if (lng > extEast) continue
    }
    const by = Math.min(nby - 1, Math.floor((lat - extSouth) / bucketHeight))
    const bx = wrapAll ? 0 : Math.min(nbx - 1, Math.floor((lng - extWest) / bucketWidth))
    const bucket = by * nbx + bx
    bucketOf[p] = bucket
    pointLng[p] = lng
    starts[bucket + 1] = (starts[bucket + 1] as number) + 1
  }
  for (let b = 1; b < starts.length; b++) starts[b] = (starts[b] as number) + (starts[b - 1] as number)
  const kept = starts[nbx * nby] as number

  // The indexed devices sorted by bucket (a counting sort), with what the inner loop needs: the
  // longitude, the latitude in radians, cos and sin of half of it (cos of the mean latitude is then
  // a product, no Math.cos per pair) and the values, non-finite ones as NaN.
  const sLng = new Float64Array(kept)
  const sLat = new Float64Array(kept)
  const sCosHalf = new Float64Array(kept)
  const sSinHalf = new Float64Array(kept)
  const sValues = new Float64Array(kept * steps)
  const fill = starts.slice(0, nbx * nby)
  for (let p = 0; p < n; p++) {
    const bucket = bucketOf[p] as number
    if (bucket < 0) continue
    const j = fill[bucket] as number
    fill[bucket] = j + 1
    const latRad = (points[p] as IdwPoint).lat * DEG
    sLng[j] = pointLng[p] as number
    sLat[j] = latRad
    sCosHalf[j] = Math.cos(latRad / 2)
    sSinHalf[j] = Math.sin(latRad / 2)
    for (let s = 0; s < steps; s++) {
      const v = values[p * steps + s] as number
      sValues[j * steps + s] = v - v === 0 ? v : NaN
    }
  }

  const hexagon = spec.shape === 'hexagon'
  const ringPositions = hexagon ? 7 : 5
  const rings = new Float64Array(total * ringPositions * 2)
  const centres = new Float64Array(total * 2)
  const cellIndex = new Uint32Array(total)
  const out = new Float64Array(total * steps)
  // Hexagon corners from the centre, counter-clockwise from 30° (pointy-top), in degrees.
  const hexLng = new Float64Array(6)
  const hexLat = new Float64Array(6)
  const circumKm = spec.cellKm / SQRT3
  for (let k = 0; k < 6; k++) {
    const angle = (30 + 60 * k) * DEG
    hexLng[k] = circumKm * Math.cos(angle) * layout.lngPerKm
    hexLat[k] = circumKm * Math.sin(angle) / KM_PER_DEGREE
  }

  // Distances in radians: the radius cancels out of the weights' ratio, so only the limits scale.
  const reach2 = (spec.maxDistanceKm / EARTH_RADIUS_KM) ** 2
  const exact2 = (EXACT_KM / EARTH_RADIUS_KM) ** 2
  const sums = new CellSums({
    starts, nbx, lng: sLng, values: sValues, rowScale: new Float64Array(kept), rowDy2: new Float64Array(kept), steps, reach2, exact2, power: spec.power, wrapAll
  })
  const { rowScale, rowDy2 } = sums

  let cell = 0
  let index = 0
  for (let r = 0; r < rows; r++) {
    const lat = south + firstRow + r * rowStep
    const latRad = lat * DEG
    const cosHalf = Math.cos(latRad / 2)
    const sinHalf = Math.sin(latRad / 2)
    const by = Math.floor((lat - extSouth) / bucketHeight)
    const byLo = Math.max(0, by - 1)
    const byHi = Math.min(nby - 1, by + 1)
    // What depends on the row's latitude only, for every device the row can reach: the radians
    // of a degree of longitude at the mean latitude (cos((a + b) / 2) = cos(a/2)·cos(b/2) −
    // sin(a/2)·sin(b/2): no Math.cos per pair) and Δlat².
    const rowEnd = starts[(byHi + 1) * nbx] as number
    for (let j = starts[byLo * nbx] as number; j < rowEnd; j++) {
      rowScale[j] = DEG * (cosHalf * (sCosHalf[j] as number) - sinHalf * (sSinHalf[j] as number))
      const dy = latRad - (sLat[j] as number)
      rowDy2[j] = dy * dy
    }
    const odd = (r & 1) === 1
    const cols = odd ? colsOdd : colsEven
    const first = odd ? firstOdd : firstEven
    for (let c = 0; c < cols; c++, index++) {
      const lng = west + first + c * colStep
      const bx = wrapAll ? 0 : Math.floor((lng - extWest) / bucketWidth)
      sums.sum(lng, byLo, byHi, Math.max(0, bx - 1), Math.min(nbx - 1, bx + 1))
      if (!sums.valuesInto(out, cell * steps)) continue
      // Longitudes come back into [-180, 180] by the centre, so a cell astride the antimeridian
      // keeps one piece (a corner may then lie up to half a cell beyond ±180).
      const shift = lng > 180 ? -360 : lng < -180 ? 360 : 0
      const cx = lng + shift
      centres[cell * 2] = cx
      centres[cell * 2 + 1] = lat
      cellIndex[cell] = index
      const ring = cell * ringPositions * 2
      if (hexagon) {
        for (let k = 0; k < 6; k++) {
          rings[ring + 2 * k] = cx + (hexLng[k] as number)
          rings[ring + 2 * k + 1] = lat + (hexLat[k] as number)
        }
        rings[ring + 12] = rings[ring] as number
        rings[ring + 13] = rings[ring + 1] as number
      } else {
        // Edges from the corner, not centre ± half, so neighbours share their corners exactly.
        const x0 = west + c * colStep + shift
        const x1 = west + (c + 1) * colStep + shift
        const y0 = south + r * rowStep
        const y1 = south + (r + 1) * rowStep
        rings[ring] = x0
        rings[ring + 1] = y0
        rings[ring + 2] = x1
        rings[ring + 3] = y0
        rings[ring + 4] = x1
        rings[ring + 5] = y1
        rings[ring + 6] = x0
        rings[ring + 7] = y1
        rings[ring + 8] = x0
        rings[ring + 9] = y0
      }
      cell++
    }
  }
  return {
    cells: cell,
    steps,
    ringPositions,
    rings: rings.subarray(0, cell * ringPositions * 2),
    centres: centres.subarray(0, cell * 2),
    cellIndex: cellIndex.subarray(0, cell),
    values: out.subarray(0, cell * steps)
  }
}

export interface LegendClass { from: number, to: number, color: string }

/** Viridis (matplotlib) at 0, 1/8, …, 1: sequential and colour-blind safe. */
const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725']
  .map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number])
const MAX_CLASSES = 7
/** Nice steps are these × 10^k, written ×10 so that bounds are integers times a power of ten. */
const NICE_TENS = [10, 20, 25, 50]

function viridis (t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1)
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x))
  const a = VIRIDIS[i] as [number, number, number]
  const b = VIRIDIS[i + 1] as [number, number, number]
  const f = x - i
  return '#' + a.map((from, k) => Math.round(from + ((b[k] as number) - from) * f).toString(16).padStart(2, '0')).join('')
}

/** n × 10^exp as the double nearest the decimal (dividing by an exact power of ten rounds once). */
const decimal = (n: number, exp: number): number => exp >= 0 ? n * 10 ** exp : n / 10 ** -exp

function withColours (bounds: number[]): LegendClass[] {
  const n = bounds.length - 1
  const classes: LegendClass[] = []
  for (let i = 0; i < n; i++) {
    classes.push({ from: bounds[i] as number, to: bounds[i + 1] as number, color: viridis(n === 1 ? 0.5 : i / (n - 1)) })
  }
  return classes
}

/**
 * At most 7 classes over [min, max] of the finite values, bounds on the smallest "nice" step
 * (1, 2, 2.5 or 5 × 10^k) that needs no more; colours along viridis. Classes are [from, to),
 * the last one [from, to].
 */
export function legendClasses (values: Float64Array): LegendClass[] {
  let min = Infinity
  let max = -Infinity
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number
    if (v - v !== 0) continue
    if (v < min) min = v
    if (v > max) max = v
  }
  if (min > max) return []
  if (min === max) return withColours([min, max])
  const range = max - min
  let exp = Math.floor(Math.log10(range / MAX_CLASSES)) - 2
  if (!Number.isFinite(range) || exp < -300 || exp > 300) {
    // Beyond what decimal steps can express: equal classes, still covering min and max exactly.
    const bounds = Array.from({ length: MAX_CLASSES + 1 }, (_, i) => min + (max / MAX_CLASSES - min / MAX_CLASSES) * i)
    bounds[MAX_CLASSES] = max
    return withColours(bounds)
  }
  // Starting below the estimate (log10 rounds) and walking up the nice steps finds the smallest.
  for (let i = 0; ; i++) {
    if (i === NICE_TENS.length) { i = 0; exp++ }
    const tens = NICE_TENS[i] as number
    const bound = (k: number): number => decimal(k * tens, exp - 1)
    const step = decimal(tens, exp - 1)
    let lo = Math.floor(min / step)
    while (bound(lo) > min) lo--
    while (bound(lo + 1) <= min) lo++
    let hi = Math.ceil(max / step)
    while (bound(hi) < max) hi++
    while (bound(hi - 1) >= max) hi--
    if (hi - lo > MAX_CLASSES) continue
    const bounds: number[] = []
    for (let k = lo; k <= hi; k++) bounds.push(bound(k))
    return withColours(bounds)
  }
}

/** The index of the class holding value, -1 for NaN or a value outside them all. */
export function classOf (classes: LegendClass[], value: number): number {
  if (Number.isNaN(value)) return -1
  const last = classes.length - 1
  for (let i = 0; i <= last; i++) {
    const c = classes[i] as LegendClass
    if (value < c.from) return -1
    if (value < c.to || (i === last && value <= c.to)) return i
  }
  return -1
}

/**
 * Coordinates as text, rounded to 6 decimals (about 0.1 m), through a small cache of the last
 * ones: neighbouring cells share their edges and a row its latitudes, and printing a number is the
 * dearest part of the features' text.
 */
class CoordinateText {
  private readonly keys = new Float64Array(16).fill(NaN)
  private readonly texts: string[] = new Array<string>(16).fill('')
  private next = 0

  text (x: number): string {
    const key = Math.round(x * 1e6)
    for (let i = 0; i < 16; i++) if (this.keys[i] === key) return this.texts[i] as string
    const text = String(key / 1e6)
    this.keys[this.next] = key
    this.texts[this.next] = text
    this.next = (this.next + 1) & 15
    return text
  }
}

/**
 * ASCII text written into a growing byte array. The features of a large grid are millions of small
 * strings; held until a join, they survive the young generation and the collector took more than
 * half of the time (7 MB of text for 10,000 cells × 24 steps: about twice as slow as bytes, with
 * the platform's 8 MB semi-space). Numbers still go through String(), which dies young.
 */
class AsciiWriter {
  private bytes: Uint8Array
  private length = 0

  constructor (capacity: number) { this.bytes = new Uint8Array(Math.max(1024, capacity)) }

  write (text: string): void {
    const n = text.length
    if (this.length + n > this.bytes.length) this.grow(n)
    const bytes = this.bytes
    let at = this.length
    for (let i = 0; i < n; i++) bytes[at++] = text.charCodeAt(i)
    this.length = at
  }

  private grow (n: number): void {
    let size = this.bytes.length * 2
    while (size < this.length + n) size *= 2
    const grown = new Uint8Array(size)
    grown.set(this.bytes.subarray(0, this.length))
    this.bytes = grown
  }

  text (): string {
    return Buffer.from(this.bytes.buffer, 0, this.length).toString('latin1')
  }
}

const FEATURE_START = '{"type":"Feature","geometry":{"type":"Polygon","coordinates":[[['

/**
 * The contract's `features` array as JSON text: a Polygon per kept cell with its values per step
 * (null for none) and their class indices. Written as text: no object or JSON.stringify per cell.
 */
export function gridFeaturesJson (grid: IdwGrid, classes: LegendClass[]): string {
  const { rings, values, steps, ringPositions } = grid
  // About the size of a feature, so that the buffer seldom grows.
  const out = new AsciiWriter(grid.cells * (120 + ringPositions * 24 + steps * 24))
  const lngs = new CoordinateText()
  const lats = new CoordinateText()
  const classTexts = classes.map((_, i) => String(i))
  out.write('[')
  for (let i = 0; i < grid.cells; i++) {
    if (i > 0) out.write(',')
    out.write(FEATURE_START)
    const ring = i * ringPositions * 2
    for (let k = 0; k < ringPositions; k++) {
      if (k > 0) out.write('],[')
      out.write(lngs.text(rings[ring + 2 * k] as number))
      out.write(',')
      out.write(lats.text(rings[ring + 2 * k + 1] as number))
    }
    out.write(']]]},"properties":{"values":[')
    for (let s = 0; s < steps; s++) {
      const v = values[i * steps + s] as number
      if (s > 0) out.write(',')
      // JSON has no NaN or Infinity: either is no value.
      out.write(v - v === 0 ? String(v) : 'null')
    }
    out.write('],"class":[')
    for (let s = 0; s < steps; s++) {
      const c = classOf(classes, values[i * steps + s] as number)
      if (s > 0) out.write(',')
      out.write(c < 0 ? 'null' : classTexts[c] as string)
    }
    out.write(']}}')
  }
  out.write(']')
  return out.text()
}
