import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { api, errorText } from '../api.js'
import { Badge, conditionOf, ErrorNote, Link } from '../components.js'
import { CONDITION_COLOUR, DeviceMap } from '../map-view.js'
import { navigate } from '../router.js'
import { session } from '../session.js'
import type { MapDevice } from '../types.js'

type Exposure = 'any' | 'indoor' | 'outdoor'

const LIST_LIMIT = 50

/** Lower-cased text a search looks in: name, city, country, owner and tags. */
const searchText = (d: MapDevice): string =>
  [d.name, d.city ?? '', d.country_code ?? '', d.owner_username, ...d.user_tags, ...d.system_tags].join('\u0001').toLowerCase()

export function MapPage () {
  const [devices, setDevices] = useState<MapDevice[] | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [query, setQuery] = useState('')
  const [exposure, setExposure] = useState<Exposure>('any')
  const [onlineOnly, setOnlineOnly] = useState(false)
  const element = useRef<HTMLDivElement>(null)
  const map = useRef<DeviceMap | null>(null)

  const load = (): void => {
    setError(null)
    // Signed in, the fresh map also has the caller's own private devices.
    api<MapDevice[]>(session() === null ? '/devices/world_map' : '/devices/fresh_world_map').then(setDevices, (err: unknown) => { setError(errorText(err)) })
  }

  useEffect(() => {
    if (element.current === null) return
    const view = new DeviceMap(element.current, (id) => { navigate(`/devices/${id}`) })
    map.current = view
    load()
    return () => { view.destroy() }
  }, [])

  const indexed = useMemo(() => devices?.map((d) => ({ device: d, text: searchText(d) })) ?? [], [devices])
  const terms = query.trim().toLowerCase().split(/\s+/).filter((t) => t !== '')
  const matches = useMemo(() => indexed.filter(({ device, text }) =>
    (exposure === 'any' || (device.exposure ?? 'outdoor') === exposure) &&
    (!onlineOnly || device.system_tags.includes('online')) &&
    terms.every((term) => text.includes(term))
  ).map(({ device }) => device), [indexed, terms.join(' '), exposure, onlineOnly])

  useEffect(() => {
    if (devices === null) return
    map.current?.show(matches)
    // The map is usable: the marks are drawn (the explorer's benchmark reads this mark).
    performance.mark('esp:map-ready')
    document.body.dataset.mapReady = 'true'
  }, [matches, devices])

  const online = useMemo(() => matches.filter((d) => d.system_tags.includes('online')).length, [matches])
  const filtering = terms.length > 0 || exposure !== 'any' || onlineOnly
  // ISO times of one format sort as text.
  const recent = useMemo(() => (devices ?? []).filter((d) => d.last_reading_at !== null)
    .sort((a, b) => (b.last_reading_at ?? '').localeCompare(a.last_reading_at ?? '')).slice(0, 8), [devices])

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
        <ErrorNote message={error} onRetry={load} />
        <p class='count' aria-live='polite'>
          {devices === null
            ? 'Loading devices…'
            : `${matches.length.toLocaleString()} of ${devices.length.toLocaleString()} devices, ${online.toLocaleString()} online`}
        </p>
        <ul class='legend' aria-label='Colours'>
          {(['online', 'offline', 'new'] as const).map((c) => <li key={c}><span class='dot' style={{ background: CONDITION_COLOUR[c] }} /> <Badge condition={c} /></li>)}
        </ul>
        {devices !== null && devices.length === 0 && (
          <div class='card empty'>
            <h2 class='panel-title'>No public devices yet</h2>
            <p><Link to='/sign-up'>Sign up</Link> and add the first one: its page gives the token to configure a kit.</p>
            <p class='muted small'>Running the platform on your machine? <code>pnpm demo</code> fills it with a demo network of 20 devices and a year of readings.</p>
          </div>
        )}
        {devices !== null && devices.length > 0 && !filtering && (
          <p class='muted small'>Pick a device on the map, or search, to see its latest values and history. Numbers on the map are groups of devices: zoom in to split them.</p>
        )}
        {devices !== null && (
          <>
            {!filtering && recent.length > 0 && <h2 class='panel-title'>Recently active</h2>}
            <ol class='results' aria-label={filtering ? 'Matching devices' : 'Recently active devices'}>
              {(filtering ? matches.slice(0, LIST_LIMIT) : recent).map((d) => (
                <li key={d.id}>
                  <Link to={`/devices/${d.id}`} class='result'>
                    <span class='dot' style={{ background: CONDITION_COLOUR[conditionOf(d)] }} aria-hidden='true' />
                    <span class='result-name'>{d.name}</span>
                    <span class='muted'>{[d.city, d.country_code].filter(Boolean).join(', ')}</span>
                  </Link>
                  <button type='button' class='link small' aria-label={`Show ${d.name} on the map`} onClick={() => { map.current?.focus(d) }}>on map</button>
                </li>
              ))}
              {filtering && matches.length > LIST_LIMIT && <li class='muted'>and {matches.length - LIST_LIMIT} more: narrow the search</li>}
              {filtering && matches.length === 0 && <li class='muted'>No device matches.</li>}
            </ol>
          </>
        )}
      </aside>
      <div class='map' ref={element} role='region' aria-label='Map of devices' />
    </div>
  )
}
