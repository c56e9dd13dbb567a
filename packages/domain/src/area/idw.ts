import { bucketsAlong, DEG, type GridSpec, KM_PER_DEGREE, layoutOf, SQRT3, totalOf } from './grid-layout.js'

// Interpolated grids for GET /v0/readings/interpolation (issue 38): each cell's
// inverse-distance-weighted value per time step (the cells: grid-layout.ts; the legend: legend.ts;
// the GeoJSON text: grid-json.ts). Pure and synchronous; columnar typed arrays so that 40,000
// cells × 24 steps cost no object per cell.
//
// Distances are equirectangular on a sphere (dx = Δlng·cos(mean lat), dy = Δlat, × R): within a
// fraction of a percent of the great circle at city to region scale (tens of km), which is what
// max_distance is for, and cheap enough to run for every (cell, device) pair. It is not meant for
// continent-sized distances.

/** Mean Earth radius (IUGG), the sphere of every distance here. */
const EARTH_RADIUS_KM = 6371.0088
/** A device closer than this to a cell's centre gives the cell its value exactly (no 1/0). */
const EXACT_KM = 1e-9
/** A safety net against a runaway allocation; the route itself refuses more than 40,000 cells. */
const MAX_GRID_CELLS = 1_000_000

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
