import type { FeatureCollection } from 'geojson'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { api, ApiError, errorText } from './api.js'
import { decodeCompactMap } from './compact-map.js'
import { formatValue } from './format.js'
import type { DeviceMap, ViewBox } from './map-view.js'
import type { AreaGrid, AreaStatistics, CompactMap, LegendClass } from './types.js'

/*
 * Colour by measurement and the interpolated surface (issue 38), loaded when a measurement is
 * first chosen: the values of the devices (their latest, or their mean of the last 24 hours from
 * GET /v0/readings/statistics for the box in view), the markers' classes and legend, and the
 * surface of GET /v0/readings/interpolation under the markers with the answer's own legend.
 */

export type Source = 'latest' | 'day'
export type Exposure = 'any' | 'indoor' | 'outdoor'

export interface AreaProps {
  map: DeviceMap
  measurement: number
  name: string
  unit: string
  source: Source
  surface: boolean
  exposure: Exposure
}

/** The colour of a device without a value. */
export const NO_VALUE = '#9aa5b1'
/** After the map stops moving, this long before the box's data is asked for. */
const SETTLE_MS = 400
/** The surface's grid: about this many cells along the box's longer side. */
const CELLS_ACROSS = 60
/** Devices weigh in cells this many cells away at most. */
const REACH_CELLS = 4
/** A surface is drawn for a box at most this wide or tall (a country); wider, the map asks to zoom in. */
const SURFACE_MAX_KM = 2500
const KM_PER_DEGREE = 111.195
const MAX_CLASSES = 7

const VIRIDIS = ['#440154', '#472d7b', '#3b528b', '#2c728e', '#21918c', '#28ae80', '#5ec962', '#addc30', '#fde725']
  .map((hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)) as [number, number, number])

/** viridis at t in [0, 1], a colour-blind-safe sequential ramp (the API's grids use the same). */
function viridis (t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1)
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x))
  const a = VIRIDIS[i] as [number, number, number]
  const b = VIRIDIS[i + 1] as [number, number, number]
  return '#' + a.map((from, k) => Math.round(from + ((b[k] as number) - from) * (x - i)).toString(16).padStart(2, '0')).join('')
}

/** k × step without binary noise (0.1 × 3 is 0.3). */
const nice = (n: number): number => Number(n.toPrecision(12))

/**
 * At most 7 classes over the values, bounds on the smallest step of 1, 2, 2.5 or 5 × 10^k that
 * needs no more (as the API's grids): [from, to), the last one [from, to].
 */
export function valueClasses (values: Iterable<number>): LegendClass[] {
  let min = Infinity
  let max = -Infinity
  for (const v of values) {
    if (!Number.isFinite(v)) continue
    if (v < min) min = v
    if (v > max) max = v
  }
  if (min > max) return []
  if (min === max) return [{ from: min, to: max, color: viridis(0.5) }]
  for (let exp = Math.floor(Math.log10((max - min) / MAX_CLASSES)) - 1; ; exp++) {
    for (const tens of [1, 2, 2.5, 5]) {
      const step = tens * 10 ** exp
      const lo = Math.floor(min / step)
      const hi = Math.max(lo + 1, Math.ceil(max / step))
      if (hi - lo > MAX_CLASSES) continue
      const n = hi - lo
      return Array.from({ length: n }, (_, i) => ({ from: nice((lo + i) * step), to: nice((lo + i + 1) * step), color: viridis(n === 1 ? 0.5 : i / (n - 1)) }))
    }
  }
}

export function classOf (classes: readonly LegendClass[], value: number): LegendClass | undefined {
  return classes.find((c, i) => value >= c.from && (value < c.to || i === classes.length - 1)) ?? (value < (classes[0]?.from ?? 0) ? classes[0] : classes[classes.length - 1])
}

const bboxParam = (box: ViewBox): string => [box.west, box.south, box.east, box.north].map((x) => x.toFixed(5)).join(',')
const isoSeconds = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')
const widthKm = (box: ViewBox): number => (box.west > box.east ? box.east + 360 - box.west : box.east - box.west) * KM_PER_DEGREE * Math.cos((box.south + box.north) / 2 * Math.PI / 180)
const heightKm = (box: ViewBox): number => (box.north - box.south) * KM_PER_DEGREE

/** The smallest 1, 2, 2.5 or 5 × 10^k at least x. */
function niceAtLeast (x: number): number {
  for (let exp = Math.floor(Math.log10(x)); ; exp++) {
    for (const tens of [1, 2, 2.5, 5, 10]) {
      const size = nice(tens * 10 ** exp)
      if (size >= x) return size
    }
  }
}

/** The grid of a box: about CELLS_ACROSS cells on its longer side, devices reaching a few cells. */
export function gridFor (box: ViewBox): { cellKm: number, reachKm: number } | null {
  const longer = Math.max(widthKm(box), heightKm(box))
  if (!(longer > 0) || longer > SURFACE_MAX_KM) return null
  const cellKm = niceAtLeast(Math.max(0.01, longer / CELLS_ACROSS))
  return { cellKm, reachKm: nice(cellKm * REACH_CELLS) }
}

/** The start of today, UTC: the surface is the day so far, one step of a 1d rollup. */
const startOfUtcDay = (ms: number): number => Math.floor(ms / 86_400_000) * 86_400_000

/** The map's box, asked for again each time the map stops moving (a moment after, the previous request abandoned). */
function useSettledBox (map: DeviceMap, active: boolean): ViewBox | null {
  const [box, setBox] = useState<ViewBox | null>(() => active ? map.viewBox() : null)
  useEffect(() => {
    if (!active) { setBox(null); return }
    setBox(map.viewBox())
    let timer: ReturnType<typeof setTimeout> | undefined
    const stop = map.onMoveEnd(() => {
      clearTimeout(timer)
      timer = setTimeout(() => { setBox(map.viewBox()) }, SETTLE_MS)
    })
    return () => { clearTimeout(timer); stop() }
  }, [map, active])
  return box
}

const fmt = (n: number): string => n.toLocaleString(undefined, { maximumFractionDigits: 3 })

function ClassList ({ label, classes, unit, none }: { label: string, classes: readonly LegendClass[], unit: string, none?: boolean }) {
  return (
    <ul class='value-legend' aria-label={label}>
      {classes.map((c) => (
        <li key={`${c.from}-${c.to}`} data-colour={c.color}>
          <span class='swatch' style={{ background: c.color }} aria-hidden='true' />
          {c.from === c.to ? `${fmt(c.from)} ${unit}` : `${fmt(c.from)} – ${fmt(c.to)} ${unit}`}
        </li>
      ))}
      {none === true && <li data-colour={NO_VALUE}><span class='swatch' style={{ background: NO_VALUE }} aria-hidden='true' />no value</li>}
    </ul>
  )
}

interface Problem { text: string }

/** A message for a failed area request: a 400 is a box too big for what was asked, said plainly. */
const problemOf = (err: unknown, tooBig: string): Problem => ({ text: err instanceof ApiError && err.status === 400 ? tooBig : errorText(err) })

/** The markers' values and legend, and the surface with its legend; renders the legends. */
export function AreaView ({ map, measurement, name, unit, source, surface, exposure }: AreaProps) {
  const [values, setValues] = useState<ReadonlyMap<number, number> | null>(null)
  const [valuesProblem, setValuesProblem] = useState<Problem | null>(null)
  const [grid, setGrid] = useState<AreaGrid | null>(null)
  const [gridState, setGridState] = useState<'idle' | 'loading' | 'zoom' | 'done'>('idle')
  const [gridProblem, setGridProblem] = useState<Problem | null>(null)
  const box = useSettledBox(map, source === 'day' || surface)

  // The latest values: the compact map with this measurement's column (the same devices as the map).
  useEffect(() => {
    if (source !== 'latest') return
    const abort = new AbortController()
    setValues(null)
    setValuesProblem(null)
    api<CompactMap>(`/devices/compact_map?measurement=${measurement}`, { signal: abort.signal }).then((answer) => {
      const known = new Map<number, number>()
      for (const p of decodeCompactMap(answer)) if (p.value !== null) known.set(p.id, p.value)
      setValues(known)
    }, (err: unknown) => { if (!abort.signal.aborted) setValuesProblem(problemOf(err, 'Zoom in to see these values.')) })
    return () => { abort.abort() }
  }, [measurement, source])

  // The last 24 hours: each device's hourly means in the box in view, averaged here; boxes seen before are kept.
  useEffect(() => { if (source === 'day') setValues(null) }, [measurement, source, exposure])
  useEffect(() => {
    if (source !== 'day' || box === null) return
    const abort = new AbortController()
    setValuesProblem(null)
    const now = Date.now()
    const query = new URLSearchParams({
      measurement_id: String(measurement),
      bbox: bboxParam(box),
      rollup: '1h',
      from: isoSeconds(now - 86_400_000),
      to: isoSeconds(now),
      per_device: 'true',
      ...(exposure === 'any' ? {} : { exposure })
    })
    api<AreaStatistics>(`/readings/statistics?${query.toString()}`, { signal: abort.signal }).then((answer) => {
      const sums = new Map<number, [number, number]>()
      for (const window of answer.windows) {
        for (const [id, value] of window.values ?? []) {
          const sum = sums.get(id)
          if (sum === undefined) sums.set(id, [value, 1])
          else { sum[0] += value; sum[1]++ }
        }
      }
      setValues((before) => {
        const next = new Map(before ?? [])
        for (const [id, [sum, n]] of sums) next.set(id, sum / n)
        return next
      })
    }, (err: unknown) => { if (!abort.signal.aborted) setValuesProblem(problemOf(err, 'Zoom in to see the last 24 hours\' values.')) })
    return () => { abort.abort() }
  }, [measurement, source, exposure, box])

  const classes = useMemo(() => values === null ? [] : valueClasses(values.values()), [values])
  const label = (value: number | null): string => value === null ? 'no value' : formatValue(value, unit)

  useEffect(() => {
    // Until the values arrive, the markers keep the colours of their state.
    if (values === null) return
    map.colourBy({
      valueOf: (id) => values?.get(id) ?? null,
      colourOf: (value) => value === null ? NO_VALUE : classOf(classes, value)?.color ?? NO_VALUE,
      label
    })
  }, [map, values, classes, unit])
  useEffect(() => () => { map.colourBy(null) }, [map])

  // The surface: today so far (one step of a 1d rollup, from 00:00 UTC), for the box in view.
  useEffect(() => {
    if (!surface || box === null) { setGrid(null); setGridState('idle'); setGridProblem(null); return }
    const cells = gridFor(box)
    if (cells === null) { setGrid(null); setGridState('zoom'); setGridProblem(null); return }
    const abort = new AbortController()
    setGridState('loading')
    setGridProblem(null)
    const now = Date.now()
    const query = new URLSearchParams({
      measurement_id: String(measurement),
      bbox: bboxParam(box),
      from: isoSeconds(startOfUtcDay(now)),
      to: isoSeconds(now),
      rollup: '1d',
      cell_size: String(cells.cellKm),
      max_distance: String(cells.reachKm),
      ...(exposure === 'any' ? {} : { exposure })
    })
    api<AreaGrid>(`/readings/interpolation?${query.toString()}`, { signal: abort.signal }).then((answer) => {
      setGrid(answer)
      setGridState('done')
    }, (err: unknown) => {
      if (abort.signal.aborted) return
      setGrid(null)
      if (err instanceof ApiError && err.status === 400) setGridState('zoom')
      else { setGridState('idle'); setGridProblem({ text: errorText(err) }) }
    })
    return () => { abort.abort() }
  }, [measurement, surface, exposure, box])

  useEffect(() => {
    if (grid === null) { map.showSurface(null); return }
    const classes = grid.classes
    map.showSurface({
      cells: grid as unknown as FeatureCollection,
      colourOf: (feature) => {
        const c = (feature.properties as AreaGrid['features'][number]['properties'] | null)?.class[0]
        return c === null || c === undefined ? null : classes[c]?.color ?? null
      }
    })
  }, [map, grid])
  useEffect(() => () => { map.showSurface(null) }, [map])

  const sourceText = source === 'latest' ? 'Latest value of each device' : 'Mean of each device\'s hourly values over the last 24 hours'
  const drawnDevices = grid?.devices.length ?? 0
  return (
    <>
      <section class='area-legend' aria-label={`Map colours: ${name}`} data-source={source}>
        <h2 class='panel-title'>{name} ({unit})</h2>
        <p class='muted small'>{sourceText}; groups show their devices' mean.</p>
        {valuesProblem !== null && <p class='note' role='status'>{valuesProblem.text}</p>}
        {values === null && valuesProblem === null && <p class='muted small' aria-busy='true'>Loading values…</p>}
        {values !== null && classes.length === 0 && <p class='muted small'>No device in view has a value.</p>}
        {values !== null && <ClassList label={`${name} colours`} classes={classes} unit={unit} none />}
      </section>
      {surface && (
        <section class='area-legend' aria-label='Surface legend' data-state={gridState}>
          <h2 class='panel-title'>Interpolated surface</h2>
          <p aria-live='polite' class='small'>
            {gridState === 'loading' && <span class='muted'>Loading the surface…</span>}
            {gridState === 'zoom' && <span class='note'>Zoom in to see the surface.</span>}
            {gridState === 'done' && grid !== null && grid.features.length === 0 && <span class='muted'>No device in view has a value today: there is no surface to draw.</span>}
          </p>
          {gridProblem !== null && <p class='note' role='status'>{gridProblem.text}</p>}
          {grid !== null && grid.features.length > 0 && (
            <>
              <ClassList label='Surface colours' classes={grid.classes} unit={unit} />
              <p class='muted small surface-note'>
                Today's mean since 00:00 UTC, inverse-distance weighted from {drawnDevices} {drawnDevices === 1 ? 'device' : 'devices'}; empty where no device is within {fmt(grid.max_distance)} km.
              </p>
            </>
          )}
        </section>
      )}
    </>
  )
}
