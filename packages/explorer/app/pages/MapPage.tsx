import type { ComponentType } from 'preact'
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks'
import { api, errorText } from '../api.js'
import { Badge, ErrorNote, Link } from '../components.js'
import { decodeCompactMap } from '../compact-map.js'
import { CONDITION_COLOUR, DeviceMap } from '../map-view.js'
import { currentPath, navigate } from '../router.js'
import { session } from '../session.js'
import type { AreaProps, Source } from '../area.js'
import type { CompactMap, Device, MapDevice, MapPoint, Measurement } from '../types.js'

type Exposure = 'any' | 'indoor' | 'outdoor'

/**
 * What "Colour by" offers: the measurements the kits on the map report, in this order, named as
 * the catalogue names them; the unit is their sensors' (the catalogue's measurements have none).
 */
const OFFERED: ReadonlyArray<[number, string]> = [
  [1, 'ºC'], [2, '%'], [14, 'ug/m3'], [13, 'ug/m3'], [27, 'ug/m3'], [6, 'ppb'], [4, 'dBA'], [3, 'lux'], [25, 'kPa'], [46, 'ppm'], [47, 'ppb']
]
const UNIT = new Map(OFFERED)

/** The map's view in its address, to share or come back to: ?measurement=14&values=24h&surface=on */
interface View { measurement: number | null, source: Source, surface: boolean }

function viewFromUrl (): View {
  const params = new URLSearchParams(location.search)
  const id = Number(params.get('measurement'))
  const measurement = UNIT.has(id) ? id : null
  return { measurement, source: params.get('values') === '24h' ? 'day' : 'latest', surface: measurement !== null && params.get('surface') === 'on' }
}

function viewToUrl (view: View): void {
  const params = new URLSearchParams(location.search)
  for (const name of ['measurement', 'values', 'surface']) params.delete(name)
  if (view.measurement !== null) {
    params.set('measurement', String(view.measurement))
    if (view.source === 'day') params.set('values', '24h')
    if (view.surface) params.set('surface', 'on')
  }
  const query = params.toString()
  history.replaceState(history.state, '', `${location.pathname}${query === '' ? '' : `?${query}`}`)
}

/** The colour and surface code (issue 38) loads when a measurement is first chosen, not with the map. */
let areaModule: Promise<ComponentType<AreaProps>> | null = null
const loadArea = async (): Promise<ComponentType<AreaProps>> => await (areaModule ??= import('../area.js').then((m) => m.AreaView))

const LIST_LIMIT = 50
const RECENT_LIMIT = 8

/** The "Recently active" list: the newest readings first (a page of the default size costs no more of the rate limit). */
const RECENT_QUERY = new URLSearchParams({ per_page: '25', 'q[last_reading_at_not_null]': 'true', 'q[s]': 'last_reading_at desc' }).toString()

/** What a search finds a device by beyond its name, from the world map: city, country, owner and tags, lower-cased. */
interface Detail { text: string, place: string }

const detailOf = (d: MapDevice): Detail => ({
  text: [d.name, d.city ?? '', d.country_code ?? '', d.owner_username, ...d.user_tags, ...d.system_tags].join('\u0001').toLowerCase(),
  place: [d.city, d.country_code].filter(Boolean).join(', ')
})

const placeOf = (d: Device): string => [d.location?.city, d.location?.country_code].filter(Boolean).join(', ')

interface Problem { message: string, retry: () => void }

const askCompactMap = async (): Promise<CompactMap> => await api<CompactMap>('/devices/compact_map')

/**
 * Opened on the map, its data is asked for while the script starts: the page's first render,
 * paint and Leaflet's set-up come before the page would ask, and the answer is there by then.
 */
let early: Promise<CompactMap> | null = currentPath() === '/' ? askCompactMap() : null
// Whoever takes it handles a failure; this keeps one nobody took from being reported as unhandled.
early?.catch(() => {})

/**
 * The map page: the map is drawn from the compact map alone (what it draws: id, position,
 * condition, exposure, name). The rest of the panel asks on demand: the recently active devices
 * once the map is ready, and the world map's places, owners and tags on the first search (until
 * they arrive, a search looks in names).
 */
export function MapPage () {
  const [points, setPoints] = useState<MapPoint[] | null>(null)
  const [details, setDetails] = useState<ReadonlyMap<number, Detail> | null>(null)
  const [recent, setRecent] = useState<Device[] | null>(null)
  const [problem, setProblem] = useState<Problem | null>(null)
  const [query, setQuery] = useState('')
  const [exposure, setExposure] = useState<Exposure>('any')
  const [onlineOnly, setOnlineOnly] = useState(false)
  const element = useRef<HTMLDivElement>(null)
  const map = useRef<DeviceMap | null>(null)
  const detailsAsked = useRef(false)
  const [view, setView] = useState<View>(viewFromUrl)
  const [measurements, setMeasurements] = useState<Measurement[] | null>(null)
  const measurementsAsked = useRef(false)
  const [Area, setArea] = useState<ComponentType<AreaProps> | null>(null)
  const [mapReady, setMapReady] = useState<DeviceMap | null>(null)

  const failed = (retry: () => void) => (err: unknown): void => { setProblem({ message: errorText(err), retry }) }
  const loadRecent = (): void => {
    setProblem(null)
    api<Device[]>(`/devices?${RECENT_QUERY}`).then(setRecent, failed(loadRecent))
  }
  const load = (): void => {
    setProblem(null)
    // Signed in, it also has the caller's own private devices.
    const asked = early ?? askCompactMap()
    early = null
    asked.then((compact) => { setPoints(decodeCompactMap(compact)); loadRecent() }, failed(load))
  }
  const loadDetails = (): void => {
    if (detailsAsked.current) return
    detailsAsked.current = true
    setProblem(null)
    api<MapDevice[]>(session() === null ? '/devices/world_map' : '/devices/fresh_world_map').then(
      (devices) => { setDetails(new Map(devices.map((d) => [d.id, detailOf(d)]))) },
      (err: unknown) => { detailsAsked.current = false; failed(loadDetails)(err) }
    )
  }

  useEffect(() => {
    if (element.current === null) return
    // Asked first: the request is on its way while the map sets itself up.
    load()
    const made = new DeviceMap(element.current, (id) => { navigate(`/devices/${id}`) })
    map.current = made
    setMapReady(made)
    return () => { made.destroy() }
  }, [])

  // The catalogue's names, once: when the control is first used, or at once for a view from the address.
  const loadMeasurements = (): void => {
    if (measurementsAsked.current) return
    measurementsAsked.current = true
    api<Measurement[]>('/measurements?per_page=200').then(
      (all) => { setMeasurements(OFFERED.flatMap(([id]) => all.filter((m) => m.id === id))) },
      (err: unknown) => { measurementsAsked.current = false; failed(loadMeasurements)(err) }
    )
  }
  useEffect(() => {
    viewToUrl(view)
    if (view.measurement === null) return
    loadMeasurements()
    if (Area === null) void loadArea().then((component) => { setArea(() => component) })
  }, [view])
  const chosen = view.measurement === null ? null : measurements?.find((m) => m.id === view.measurement) ?? null

  const terms = query.trim().toLowerCase().split(/\s+/).filter((t) => t !== '')
  const searching = terms.length > 0
  useEffect(() => { if (searching && points !== null) loadDetails() }, [searching, points])
  const filtering = searching || exposure !== 'any' || onlineOnly
  // Made when first searched, not before the map is drawn. Devices the details do not know
  // (added since) are found by name.
  const indexed = useMemo(() => !searching || points === null ? null : points.map((p) => ({ point: p, text: details?.get(p.id)?.text ?? p.name.toLowerCase() })), [points, details, searching])
  const matches = useMemo(() => {
    if (!filtering || points === null) return points ?? []
    const kept = (p: MapPoint): boolean => (exposure === 'any' || p.exposure === exposure) && (!onlineOnly || p.condition === 'online')
    if (indexed === null) return points.filter(kept)
    return indexed.filter(({ point, text }) => kept(point) && terms.every((term) => text.includes(term))).map(({ point }) => point)
  }, [points, indexed, terms.join(' '), exposure, onlineOnly])

  // Before the page is painted: waiting for a paint of the panel would delay the map by a frame.
  useLayoutEffect(() => {
    if (points === null) return
    map.current?.show(matches)
    // The map is usable: the marks are drawn (the explorer's benchmark reads this mark).
    performance.mark('esp:map-ready')
    document.body.dataset.mapReady = 'true'
  }, [matches, points])

  const online = useMemo(() => matches.reduce((n, d) => d.condition === 'online' ? n + 1 : n, 0), [matches])
  const pending = searching && details === null
  // The list's newest that are on the map (located, not test devices).
  const recentShown = useMemo(() => {
    if (recent === null || points === null) return []
    const byId = new Map(points.map((p) => [p.id, p]))
    return recent.flatMap((d) => {
      const point = byId.get(d.id)
      return point === undefined ? [] : [{ point, place: placeOf(d) }]
    }).slice(0, RECENT_LIMIT)
  }, [recent, points])
  const listed = filtering ? matches.slice(0, LIST_LIMIT).map((point) => ({ point, place: details?.get(point.id)?.place ?? '' })) : recentShown

  return (
    <div class='map-page'>
      <aside class='panel' aria-label='Find devices'>
        <form class='search' role='search' onSubmit={(e) => { e.preventDefault(); const first = matches[0]; if (first !== undefined) navigate(`/devices/${first.id}`) }}>
          <label class='field'>
            <span class='field-label'>Search devices</span>
            <input
              type='search' name='q' value={query} placeholder='Name, city or tag' autoComplete='off'
              onInput={(e) => { setQuery(e.currentTarget.value) }}
            />
          </label>
          <div class='filters'>
            <label class='field inline'>
              <span class='field-label'>Placed</span>
              <select value={exposure} onChange={(e) => { setExposure(e.currentTarget.value as Exposure) }}>
                <option value='any'>indoors or outdoors</option>
                <option value='outdoor'>outdoors</option>
                <option value='indoor'>indoors</option>
              </select>
            </label>
            <label class='check'>
              <input type='checkbox' checked={onlineOnly} onChange={(e) => { setOnlineOnly(e.currentTarget.checked) }} />
              Online only
            </label>
          </div>
        </form>
        <fieldset class='colour-by'>
          <legend class='field-label'>Map colours</legend>
          <div class='filters'>
            <label class='field'>
              <span class='field-label'>Colour by</span>
              <select
                value={view.measurement === null ? 'state' : String(view.measurement)}
                onFocus={loadMeasurements} onPointerDown={loadMeasurements}
                onChange={(e) => {
                  const value = e.currentTarget.value
                  setView((v) => value === 'state' ? { ...v, measurement: null, surface: false } : { ...v, measurement: Number(value) })
                }}
              >
                <option value='state'>state (online/offline)</option>
                {(measurements ?? []).map((m) => <option key={m.id} value={String(m.id)}>{m.name}</option>)}
                {measurements === null && view.measurement !== null && <option value={String(view.measurement)}>Loading…</option>}
              </select>
            </label>
            {view.measurement !== null && (
              <label class='field'>
                <span class='field-label'>Values</span>
                <select value={view.source} onChange={(e) => { const source = e.currentTarget.value as Source; setView((v) => ({ ...v, source })) }}>
                  <option value='latest'>latest value</option>
                  <option value='day'>last 24 h average</option>
                </select>
              </label>
            )}
          </div>
          {view.measurement !== null && (
            <label class='check'>
              <input type='checkbox' checked={view.surface} onChange={(e) => { const surface = e.currentTarget.checked; setView((v) => ({ ...v, surface })) }} />
              Interpolated surface
            </label>
          )}
        </fieldset>
        <ErrorNote message={problem?.message ?? null} onRetry={() => { problem?.retry() }} />
        <p class='count' aria-live='polite'>
          {points === null
            ? 'Loading devices…'
            : `${matches.length.toLocaleString()} of ${points.length.toLocaleString()} devices, ${online.toLocaleString()} online`}
        </p>
        {view.measurement === null && (
          <ul class='legend' aria-label='Colours'>
            {(['online', 'offline', 'new'] as const).map((c) => <li key={c}><span class='dot' style={{ background: CONDITION_COLOUR[c] }} /> <Badge condition={c} /></li>)}
          </ul>
        )}
        {view.measurement !== null && Area !== null && mapReady !== null && (
          <Area
            key={view.measurement} map={mapReady} measurement={view.measurement} name={chosen?.name ?? 'Loading…'}
            unit={UNIT.get(view.measurement) ?? ''} source={view.source} surface={view.surface} exposure={exposure}
          />
        )}
        {points !== null && points.length === 0 && (
          <div class='card empty'>
            <h2 class='panel-title'>No public devices yet</h2>
            <p><Link to='/sign-up'>Sign up</Link> and add the first one: its page gives the token to configure a kit.</p>
            <p class='muted small'>Running the platform on your machine? <code>pnpm demo</code> fills it with a demo network of 20 devices and a year of readings.</p>
          </div>
        )}
        {points !== null && points.length > 0 && !filtering && (
          <p class='muted small'>Pick a device on the map, or search, to see its latest values and history. Numbers on the map are groups of devices: zoom in to split them.</p>
        )}
        {points !== null && (
          <>
            {!filtering && recentShown.length > 0 && <h2 class='panel-title'>Recently active</h2>}
            <ol class='results' aria-label={filtering ? 'Matching devices' : 'Recently active devices'}>
              {listed.map(({ point, place }) => (
                <li key={point.id}>
                  <Link to={`/devices/${point.id}`} class='result'>
                    <span class='dot' style={{ background: CONDITION_COLOUR[point.condition] }} aria-hidden='true' />
                    <span class='result-name'>{point.name}</span>
                    <span class='muted'>{place}</span>
                  </Link>
                  <button type='button' class='link small' aria-label={`Show ${point.name} on the map`} onClick={() => { map.current?.focus(point) }}>on map</button>
                </li>
              ))}
              {filtering && matches.length > LIST_LIMIT && <li class='muted'>and {matches.length - LIST_LIMIT} more: narrow the search</li>}
              {pending && <li class='muted'>Searching places, owners and tags…</li>}
              {filtering && !pending && matches.length === 0 && <li class='muted'>No device matches.</li>}
            </ol>
          </>
        )}
      </aside>
      <div class='map' ref={element} role='region' aria-label='Map of devices' />
    </div>
  )
}
