import t, { type Test } from 'tap'
import { gridFeaturesJson } from '../../src/area/grid-json.js'
import { gridCellCount, type GridSpec } from '../../src/area/grid-layout.js'
import { idwGrid, type IdwGrid, type IdwPoint } from '../../src/area/idw.js'
import { classOf, legendClasses, type LegendClass } from '../../src/area/legend.js'
import { seededRandom } from '@esp/test-helpers/random'

const R = 6371.0088
const DEG = Math.PI / 180

/** The equirectangular distance in km, written plainly: Δlng wrapped to (-180, 180], cos of the mean latitude. */
function distanceKm (lat1: number, lng1: number, lat2: number, lng2: number): number {
  let dl = lng1 - lng2
  while (dl > 180) dl -= 360
  while (dl <= -180) dl += 360
  const dx = dl * DEG * Math.cos((lat1 + lat2) / 2 * DEG)
  const dy = (lat1 - lat2) * DEG
  return R * Math.sqrt(dx * dx + dy * dy)
}

/** IDW at one spot by brute force over every point. */
function reference (points: readonly IdwPoint[], values: Float64Array, steps: number, step: number, lat: number, lng: number, spec: GridSpec): number {
  let num = 0
  let den = 0
  let exact = 0
  let exactN = 0
  for (let p = 0; p < points.length; p++) {
    const v = values[p * steps + step] as number
    if (!Number.isFinite(v)) continue
    const point = points[p] as IdwPoint
    const d = distanceKm(lat, lng, point.lat, point.lng)
    if (d > spec.maxDistanceKm) continue
    if (d < 1e-9) { exact += v; exactN++; continue }
    const w = 1 / d ** spec.power
    num += v * w
    den += w
  }
  if (exactN > 0) return exact / exactN
  return den > 0 ? num / den : NaN
}

const centreOf = (grid: IdwGrid, cell: number): [number, number] =>
  [grid.centres[cell * 2] as number, grid.centres[cell * 2 + 1] as number]

/** Every cell of the spec: a grid whose one point reaches them all. */
function allCells (spec: GridSpec): IdwGrid {
  const { west, south, east, north } = spec.bbox
  const lng = west > east ? west : (west + east) / 2
  return idwGrid([{ id: 1, lat: (south + north) / 2, lng }], new Float64Array([1]), 1, { ...spec, maxDistanceKm: 50_000 })
}

/** A bbox of about the given size in km, maybe across the antimeridian. */
function randomSpec (rand: () => number, shape: GridSpec['shape'], across = false): GridSpec {
  const south = -70 + rand() * 130
  const heightKm = 1 + rand() * 80
  const widthKm = 1 + rand() * 80
  const north = Math.min(89, south + heightKm / 111.195)
  const degLng = widthKm / (111.195 * Math.cos((south + north) / 2 * DEG))
  const west = across ? 180 - rand() * degLng : -179 + rand() * (358 - degLng)
  let east = west + degLng
  if (east > 180) east -= 360
  return { bbox: { west, south, east, north }, cellKm: 0.5 + rand() * 4, shape, power: 2, maxDistanceKm: 5 }
}

function signedArea (ring: Float64Array, at: number, positions: number): number {
  let area = 0
  for (let k = 0; k < positions - 1; k++) {
    const x1 = ring[at + 2 * k] as number
    const y1 = ring[at + 2 * k + 1] as number
    const x2 = ring[at + 2 * k + 2] as number
    const y2 = ring[at + 2 * k + 3] as number
    area += x1 * y2 - x2 * y1
  }
  return area / 2
}

function closeTo (t: Test, got: number, want: number, message: string): void {
  if (Number.isNaN(want)) t.ok(Number.isNaN(got), `${message}: NaN`)
  else t.ok(Math.abs(got - want) <= 1e-9 * Math.abs(want), `${message}: ${got} ≈ ${want}`)
}

t.test('the cell count is the number of cells laid out, in constant time', async (t) => {
  const rand = seededRandom(38)
  let specs = 0
  let mismatches = 0
  let outside = 0
  for (let i = 0; i < 300; i++) {
    const spec = randomSpec(rand, i % 2 === 0 ? 'square' : 'hexagon', i % 5 === 0)
    const count = gridCellCount(spec)
    const grid = allCells(spec)
    specs++
    if (grid.cells !== count) mismatches++
    const { west, south, east, north } = spec.bbox
    const width = west > east ? east + 360 - west : east - west
    for (let c = 0; c < grid.cells; c++) {
      const [lng, lat] = centreOf(grid, c)
      let dl = lng - west
      if (dl < -1e-9) dl += 360
      const tolerance = 1e-9
      if (!(lat >= south - tolerance && lat <= north + tolerance && dl >= -tolerance && dl <= width + tolerance && lng >= -180 && lng <= 180)) outside++
      if (grid.cellIndex[c] !== c) outside++
    }
  }
  t.equal(mismatches, 0, `${specs} generated bboxes, sizes and shapes: as many cells as counted`)
  t.equal(outside, 0, 'every centre inside its bbox, longitudes in [-180, 180], cells in order')

  const world: GridSpec = { bbox: { west: -180, south: -85, east: 180, north: 85 }, cellKm: 0.01, shape: 'hexagon', power: 2, maxDistanceKm: 5 }
  const started = performance.now()
  const huge = gridCellCount(world)
  t.ok(huge > 1e12 && Number.isFinite(huge), `a world of 10 m cells is counted (${huge.toExponential(2)}) without laying them out`)
  t.ok(performance.now() - started < 50, 'at once')
  t.throws(() => idwGrid([], new Float64Array(0), 1, world), RangeError, 'and idwGrid refuses it')

  const exact: GridSpec = { bbox: { west: 0, south: 0, east: 10 / 111.195, north: 10 / 111.195 }, cellKm: 1, shape: 'square', power: 2, maxDistanceKm: 5 }
  t.equal(gridCellCount(exact), 100, 'a 10 km square at the equator holds 100 cells of 1 km')
  t.equal(gridCellCount({ ...exact, bbox: { west: 10, south: 0, east: 10, north: 1 } }), 0, 'no width, no squares')
  t.throws(() => gridCellCount({ ...exact, cellKm: 0 }), RangeError)
  t.throws(() => gridCellCount({ ...exact, bbox: { ...exact.bbox, west: NaN } }), RangeError)
  t.throws(() => gridCellCount({ ...exact, bbox: { ...exact.bbox, north: 91 } }), RangeError)
})

t.test('hexagons are pointy-top, cellKm between opposite edges, rows offset by half a cell', async (t) => {
  const spec: GridSpec = { bbox: { west: 2.05, south: 41.32, east: 2.23, north: 41.47 }, cellKm: 2, shape: 'hexagon', power: 2, maxDistanceKm: 5 }
  const grid = allCells(spec)
  t.equal(grid.ringPositions, 7)
  const kmPerLng = 111.195 * Math.cos((41.32 + 41.47) / 2 * DEG)
  const ring = grid.rings
  // Corners counter-clockwise from 30°: 0 and 1 are the east edge's top and the top corner.
  t.ok(Math.abs(((ring[0] as number) - (ring[4] as number)) * kmPerLng - 2) < 1e-9, 'east edge to west edge: 2 km')
  t.equal(ring[2], centreOf(grid, 0)[0], 'the top corner is above the centre')
  t.ok(Math.abs(((ring[3] as number) - centreOf(grid, 0)[1]) * 111.195 - 2 / Math.sqrt(3)) < 1e-9, 'at the circumradius')
  const [x0] = centreOf(grid, 0)
  const [x1] = centreOf(grid, 1)
  t.ok(Math.abs((x1 - x0) * kmPerLng - 2) < 1e-9, 'centres of a row 2 km apart')
  const secondRow = Array.from(grid.centres.filter((_, i) => i % 2 === 1)).findIndex((lat) => lat > centreOf(grid, 0)[1])
  const [xOdd, yOdd] = centreOf(grid, secondRow)
  t.ok(Math.abs((x0 - xOdd) * kmPerLng - 1) < 1e-9, 'the next row shifted half a cell west')
  t.ok(Math.abs((yOdd - centreOf(grid, 0)[1]) * 111.195 - Math.sqrt(3)) < 1e-9, '1.5 circumradii up')
})

/** Compares every cell of the spec with the reference: values at 1e-9, and which cells are kept. */
function againstReference (points: readonly IdwPoint[], values: Float64Array, steps: number, spec: GridSpec): { checked: number, wrong: number, keptWrong: number } {
  const grid = idwGrid(points, values, steps, spec)
  const all = allCells(spec)
  let checked = 0
  let wrong = 0
  let keptWrong = 0
  let kept = 0
  for (let c = 0; c < all.cells; c++) {
    const [lng, lat] = centreOf(all, c)
    const want = Array.from({ length: steps }, (_, s) => reference(points, values, steps, s, lat, lng, spec))
    if (want.every(Number.isNaN)) continue
    if (grid.cellIndex[kept] !== c) { keptWrong++; break }
    for (let s = 0; s < steps; s++) {
      const got = grid.values[kept * steps + s] as number
      const w = want[s] as number
      checked++
      if (Number.isNaN(w) ? !Number.isNaN(got) : !(Math.abs(got - w) <= 1e-9 * Math.abs(w))) wrong++
    }
    kept++
  }
  if (kept !== grid.cells) keptWrong++
  return { checked, wrong, keptWrong }
}

t.test('IDW against a brute-force reference, per step, with cells beyond reach left out', async (t) => {
  const rand = seededRandom(2026)
  const total = { checked: 0, wrong: 0, keptWrong: 0 }
  const add = (r: typeof total): void => { total.checked += r.checked; total.wrong += r.wrong; total.keptWrong += r.keptWrong }
  for (let round = 0; round < 24; round++) {
    const spec = { ...randomSpec(rand, round % 2 === 0 ? 'square' : 'hexagon', round % 6 === 0), power: [2, 1, 3.5, 0.5][round % 4] as number, maxDistanceKm: round % 5 === 4 ? 0.3 : 1 + rand() * 10 }
    const { west, south, east, north } = spec.bbox
    const width = west > east ? east + 360 - west : east - west
    const steps = 1 + (round % 4) * 2
    const n = 5 + Math.floor(rand() * (round % 5 === 4 ? 600 : 60))
    const points: IdwPoint[] = []
    for (let p = 0; p < n; p++) {
      // Some outside the bbox: they still count for the cells near its edges.
      let lng = west - 0.1 * width + rand() * 1.2 * width
      if (lng > 180) lng -= 360
      points.push({ id: p, lat: south - 0.05 + rand() * (north - south + 0.1), lng })
    }
    const values = new Float64Array(n * steps).map(() => rand() < 0.2 ? NaN : 1 + rand() * 99)
    add(againstReference(points, values, steps, spec))
  }
  // Near the pole a degree of longitude is short: the reach goes round and every device is a
  // neighbour. Around the world: cells near ±180 see devices on the other side.
  const polar: GridSpec = { bbox: { west: -20, south: 86, east: 40, north: 89 }, cellKm: 20, shape: 'hexagon', power: 2, maxDistanceKm: 400 }
  const world: GridSpec = { bbox: { west: -180, south: -60, east: 180, north: 60 }, cellKm: 400, shape: 'square', power: 2, maxDistanceKm: 900 }
  for (const spec of [polar, world]) {
    const points = Array.from({ length: 300 }, (_, id) => ({ id, lat: spec.bbox.south - 3 + rand() * (spec.bbox.north - spec.bbox.south + 4), lng: -180 + rand() * 360 }))
    add(againstReference(points, new Float64Array(300 * 2).map(() => rand() < 0.2 ? NaN : rand() * 10), 2, spec))
  }
  t.ok(total.checked > 10_000, `${total.checked} values checked`)
  t.equal(total.wrong, 0, 'each within 1e-9 of the reference, NaN where it is')
  t.equal(total.keptWrong, 0, 'exactly the cells with a value in some step are kept, in order')
})

t.test('a point at a cell centre gives its value exactly; nothing is invented beyond reach', async (t) => {
  const spec: GridSpec = { bbox: { west: 2.05, south: 41.32, east: 2.23, north: 41.47 }, cellKm: 1, shape: 'square', power: 2, maxDistanceKm: 3 }
  const all = allCells(spec)
  const [lng, lat] = centreOf(all, 37)
  const points = [{ id: 1, lat, lng }, { id: 2, lat: lat + 0.01, lng: lng + 0.01 }, { id: 3, lat: lat - 0.004, lng }]
  const grid = idwGrid(points, new Float64Array([17.25, 3, 99]), 1, spec)
  const at = Array.from(grid.cellIndex).indexOf(37)
  t.equal(grid.values[at], 17.25, 'the value itself, not a weighted mean')

  const one = idwGrid([{ id: 1, lat, lng }], new Float64Array([5, NaN]), 2, spec)
  t.ok(one.cells > 0 && one.cells < all.cells, `${one.cells} of ${all.cells} cells within 3 km`)
  for (let c = 0; c < one.cells; c++) {
    const [x, y] = centreOf(one, c)
    if (!(distanceKm(y, x, lat, lng) <= 3)) t.fail(`cell ${c} is beyond reach`)
    if (one.values[c * 2] !== 5) t.fail('one point: its value everywhere in reach')
    if (!Number.isNaN(one.values[c * 2 + 1])) t.fail('a step without values stays NaN')
  }
  const far = idwGrid([{ id: 1, lat: 45, lng: 2.1 }], new Float64Array([5]), 1, spec)
  t.equal(far.cells, 0, 'no point within reach: no cell')
  t.equal(idwGrid([], new Float64Array(0), 3, spec).cells, 0, 'no points: no cell')
  t.throws(() => idwGrid(points, new Float64Array(2), 1, spec), RangeError, 'values must match points × steps')
})

t.test('steps are independent: a point without a value in a step does not weigh there', async (t) => {
  const spec: GridSpec = { bbox: { west: 2.05, south: 41.32, east: 2.23, north: 41.47 }, cellKm: 1, shape: 'hexagon', power: 2, maxDistanceKm: 50 }
  const points = [{ id: 1, lat: 41.35, lng: 2.08 }, { id: 2, lat: 41.44, lng: 2.2 }]
  const grid = idwGrid(points, new Float64Array([10, NaN, 20, 20]), 2, spec)
  t.equal(grid.cells, gridCellCount(spec))
  let between = 0
  for (let c = 0; c < grid.cells; c++) {
    const v0 = grid.values[c * 2] as number
    if (v0 > 10 && v0 < 20) between++
    if (grid.values[c * 2 + 1] !== 20) t.fail(`cell ${c}: step 1 has only the second point`)
  }
  t.equal(between, grid.cells, 'step 0 weighs both')
})

t.test('rings are closed and counter-clockwise, and stay whole across the antimeridian', async (t) => {
  const rand = seededRandom(7)
  let bad = 0
  let rings = 0
  for (let i = 0; i < 40; i++) {
    const spec = randomSpec(rand, i % 2 === 0 ? 'square' : 'hexagon', i % 3 === 0)
    const grid = allCells(spec)
    const positions = grid.ringPositions
    t.equal(positions, spec.shape === 'square' ? 5 : 7)
    for (let c = 0; c < grid.cells; c++, rings++) {
      const at = c * positions * 2
      const first = [grid.rings[at], grid.rings[at + 1]]
      const last = [grid.rings[at + 2 * positions - 2], grid.rings[at + 2 * positions - 1]]
      if (first[0] !== last[0] || first[1] !== last[1]) bad++
      if (!(signedArea(grid.rings, at, positions) > 0)) bad++
      for (let k = 0; k < positions; k++) {
        if (Math.abs((grid.rings[at + 2 * k] as number) - centreOf(grid, c)[0]) > 1) bad++
      }
    }
  }
  t.ok(rings > 1000, `${rings} rings`)
  t.equal(bad, 0, 'first = last, positive signed area, no corner on the far side of the world')
})

t.test('a bbox across the antimeridian', async (t) => {
  const spec: GridSpec = { bbox: { west: 179.9, south: -17.2, east: -179.9, north: -17 }, cellKm: 1, shape: 'square', power: 2, maxDistanceKm: 20 }
  const count = gridCellCount(spec)
  const kmWide = 0.2 * 111.195 * Math.cos(17.1 * DEG)
  t.equal(count, Math.floor(kmWide + 0.5) * Math.floor(0.2 * 111.195 + 0.5), 'east taken as east + 360')
  const points = [{ id: 1, lat: -17.1, lng: -179.95 }, { id: 2, lat: -17.1, lng: 179.95 }]
  const values = new Float64Array([10, 30])
  const grid = idwGrid(points, values, 1, spec)
  t.equal(grid.cells, count, 'every cell within reach')
  let east = 0
  let west = 0
  for (let c = 0; c < grid.cells; c++) {
    const [lng, lat] = centreOf(grid, c)
    if (lng > 0) east++
    else west++
    closeTo(t, grid.values[c] as number, reference(points, values, 1, 0, lat, lng, spec), `cell ${c}`)
    // Cells beside the line weigh the point across it as much as the one on their side.
    if (Math.abs(Math.abs(lng) - 180) < 0.005) t.ok((grid.values[c] as number) > 10 && (grid.values[c] as number) < 30)
  }
  t.ok(east > 0 && west > 0, `cells on both sides (${east} and ${west}), longitudes in [-180, 180]`)
})

t.test('legend classes: at most 7, nice, ascending, covering min..max; classOf finds each value', async (t) => {
  const rand = seededRandom(99)
  const nice = (step: number): boolean => {
    const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9)
    return [1, 2, 2.5, 5, 10].some((m) => Math.abs(mantissa - m) < 1e-6)
  }
  let problems = 0
  for (let i = 0; i < 500; i++) {
    const scale = 10 ** (-4 + rand() * 10)
    const offset = (rand() - 0.3) * scale * (rand() < 0.3 ? 100 : 1)
    const n = 1 + Math.floor(rand() * 50)
    const values = new Float64Array(n).map(() => rand() < 0.1 ? NaN : offset + rand() * scale)
    const finite = Array.from(values).filter(Number.isFinite)
    const classes = legendClasses(values)
    if (finite.length === 0) { if (classes.length !== 0) problems++; continue }
    const min = Math.min(...finite)
    const max = Math.max(...finite)
    const ok = classes.length >= 1 && classes.length <= 7 &&
      (classes[0] as LegendClass).from <= min && (classes.at(-1) as LegendClass).to >= max &&
      classes.every((c, k) => /^#[0-9a-f]{6}$/.test(c.color) && (min === max ? c.from === c.to : c.from < c.to) &&
        (k === 0 || c.from === (classes[k - 1] as LegendClass).to))
    if (!ok) { problems++; t.comment(JSON.stringify({ min, max, classes })); continue }
    if (min !== max) {
      const step = (classes[0] as LegendClass).to - (classes[0] as LegendClass).from
      const multiple = (classes[0] as LegendClass).from / step
      if (!nice(step) || Math.abs(multiple - Math.round(multiple)) > 1e-6 * Math.max(1, Math.abs(multiple))) {
        problems++
        t.comment(JSON.stringify({ step, classes }))
      }
    }
    for (const v of finite) {
      const k = classOf(classes, v)
      const c = classes[k]
      if (c === undefined || v < c.from || v > c.to) problems++
    }
  }
  t.equal(problems, 0, '500 generated sets')

  t.same(legendClasses(new Float64Array([0.3, 4.9])).map((c) => c.from), [0, 1, 2, 3, 4], 'from 0 by 1')
  t.same(legendClasses(new Float64Array([0.3, 4.9])).at(-1)?.to, 5)
  t.same(legendClasses(new Float64Array([0.1, 0.7])).map((c) => c.to), [0.2, 0.3, 0.4, 0.5, 0.6, 0.7], 'bounds are the decimals, not 0.30000000000000004')
  const five = legendClasses(new Float64Array([0, 5]))
  t.equal(five[0]?.color, '#440154', 'viridis from its dark end')
  t.equal(five.at(-1)?.color, '#fde725', 'to its light end')
  t.same(legendClasses(new Float64Array([NaN, NaN])), [], 'no value, no class')
  t.same(legendClasses(new Float64Array(0)), [])
  const single = legendClasses(new Float64Array([4.2, 4.2, NaN]))
  t.equal(single.length, 1, 'one value, one class')
  t.equal(classOf(single, 4.2), 0)
  t.equal(classOf(five, NaN), -1, 'NaN has no class')
  t.equal(classOf(five, -1), -1, 'nor a value below them all')
  t.equal(classOf(five, 5), five.length - 1, 'the last class holds its upper bound')
  t.equal(classOf(five, 1), 1, 'a bound belongs to the class it starts')
})

t.test('the features JSON parses and matches the grid', async (t) => {
  for (const shape of ['square', 'hexagon'] as const) {
    const spec: GridSpec = { bbox: { west: 2.05, south: 41.32, east: 2.23, north: 41.47 }, cellKm: 1.5, shape, power: 2, maxDistanceKm: 3 }
    const rand = seededRandom(shape === 'square' ? 1 : 2)
    const points = Array.from({ length: 30 }, (_, id) => ({ id, lat: 41.32 + rand() * 0.15, lng: 2.05 + rand() * 0.18 }))
    const values = new Float64Array(30 * 3).map(() => rand() < 0.3 ? NaN : rand() * 40 - 5)
    const grid = idwGrid(points, values, 3, spec)
    const classes = legendClasses(grid.values)
    const text = gridFeaturesJson(grid, classes)
    t.ok(text.startsWith('['), 'an array')
    const features = JSON.parse(text) as Array<{ type: string, geometry: { type: string, coordinates: number[][][] }, properties: { values: Array<number | null>, class: Array<number | null> } }>
    t.equal(features.length, grid.cells, `${shape}: a feature per kept cell`)
    let bad = 0
    features.forEach((feature, c) => {
      if (feature.type !== 'Feature' || feature.geometry.type !== 'Polygon' || feature.geometry.coordinates.length !== 1) bad++
      const ring = feature.geometry.coordinates[0] as number[][]
      if (ring.length !== grid.ringPositions) bad++
      ring.forEach((position, k) => {
        const at = (c * grid.ringPositions + k) * 2
        if (position[0] !== Math.round((grid.rings[at] as number) * 1e6) / 1e6) bad++
        if (position[1] !== Math.round((grid.rings[at + 1] as number) * 1e6) / 1e6) bad++
      })
      for (let s = 0; s < 3; s++) {
        const v = grid.values[c * 3 + s] as number
        const k = classOf(classes, v)
        if (feature.properties.values[s] !== (Number.isNaN(v) ? null : v)) bad++
        if (feature.properties.class[s] !== (k < 0 ? null : k)) bad++
      }
    })
    t.equal(bad, 0, `${shape}: coordinates to 6 decimals, values in full, null for none, classes`)
    t.ok(features.some((f) => f.properties.values.includes(null)), 'some nulls among them')
  }
  t.equal(gridFeaturesJson(idwGrid([], new Float64Array(0), 1, { bbox: { west: 0, south: 0, east: 1, north: 1 }, cellKm: 10, shape: 'square', power: 2, maxDistanceKm: 5 }), []), '[]')
})

t.test('timings (printed, not asserted)', async (t) => {
  const midLat = 41.4
  const dLat = 1 / 111.195
  const dLng = dLat / Math.cos(midLat * DEG)
  const spec: GridSpec = { bbox: { west: 2, south: midLat - 50 * dLat, east: 2 + 100 * dLng, north: midLat + 50 * dLat }, cellKm: 1, shape: 'square', power: 2, maxDistanceKm: 5 }
  t.equal(gridCellCount(spec), 10_000, '100 × 100 cells')
  const rand = seededRandom(5)
  const points = Array.from({ length: 1000 }, (_, id) => ({ id, lat: spec.bbox.south + rand() * 100 * dLat, lng: 2 + rand() * 100 * dLng }))
  const time = (steps: number, over: GridSpec): string => {
    const values = new Float64Array(1000 * steps).map(() => rand() * 50)
    const runs: number[] = []
    let json = 0
    for (let i = 0; i < 7; i++) {
      const started = performance.now()
      const grid = idwGrid(points, values, steps, over)
      runs.push(performance.now() - started)
      const before = performance.now()
      gridFeaturesJson(grid, legendClasses(grid.values))
      json = performance.now() - before
    }
    return `first ${(runs[0] as number).toFixed(1)} ms, then median ${(runs.slice(1).sort((a, b) => a - b)[3] as number).toFixed(1)} ms; classes + features JSON ${json.toFixed(1)} ms`
  }
  t.comment(`100 × 100 squares, 1,000 points, 5 km, 1 step: ${time(1, spec)}`)
  t.comment(`100 × 100 squares, 1,000 points, 5 km, 24 steps: ${time(24, spec)}`)
  t.comment(`100 × 100 hexagons, 1,000 points, 5 km, 1 step: ${time(1, { ...spec, shape: 'hexagon' })}`)
  t.comment(`100 × 100 squares, 1,000 points all within reach (500 km), 1 step: ${time(1, { ...spec, maxDistanceKm: 500 })}`)
})
