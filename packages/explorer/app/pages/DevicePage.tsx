import type { JSX } from 'preact'
import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { api, ApiError, errorText } from '../api.js'
import { Chart, type Series } from '../chart.js'
import { Badge, conditionOf, ErrorNote, Link, Time } from '../components.js'
import { formatValue, timeZone } from '../format.js'
import { autoRollup, FUNCTIONS, isoSeconds, RANGES, type RangeName, reportingStep, ROLLUPS, rollupForRange, toSeries } from '../history.js'
import { subscribeLive, type LiveReadings } from '../live.js'
import { session } from '../session.js'
import type { Device, DeviceSensor, Histories } from '../types.js'

interface Controls { range: RangeName, rollup: string, fn: string, from: number, to: number }

function controlsFromUrl (): Controls {
  const params = new URLSearchParams(location.search)
  const range = (params.get('range') ?? 'week') as RangeName
  const now = Date.now()
  const preset = RANGES.find((r) => r.name === range)
  const from = Date.parse(params.get('from') ?? '')
  const to = Date.parse(params.get('to') ?? '')
  const custom = range === 'custom' && Number.isFinite(from) && Number.isFinite(to) && from < to
  return {
    range: custom ? 'custom' : preset?.name ?? 'week',
    rollup: params.get('rollup') ?? 'auto',
    fn: FUNCTIONS.includes(params.get('function') as typeof FUNCTIONS[number]) ? params.get('function') as string : 'avg',
    from: custom ? from : now - (preset ?? RANGES[1]!).seconds * 1000,
    to: custom ? to : now
  }
}

function controlsToUrl (c: Controls): void {
  const params = new URLSearchParams()
  params.set('range', c.range)
  if (c.range === 'custom') { params.set('from', isoSeconds(c.from)); params.set('to', isoSeconds(c.to)) }
  if (c.rollup !== 'auto') params.set('rollup', c.rollup)
  if (c.fn !== 'avg') params.set('function', c.fn)
  history.replaceState(null, '', `${location.pathname}?${params.toString()}`)
}

/** datetime-local wants local wall time without a zone. */
const toLocalInput = (ms: number): string => {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000)
  return d.toISOString().slice(0, 16)
}

interface Latest { value: number | null, at: string | null }

export function DevicePage ({ id }: { id: number }) {
  const [device, setDevice] = useState<Device | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [controls, setControls] = useState(controlsFromUrl)
  const [latest, setLatest] = useState<Map<number, Latest>>(new Map())
  const [livePoints, setLivePoints] = useState<Map<number, [number, number][]>>(new Map())
  const [live, setLive] = useState(false)
  const [histories, setHistories] = useState<Map<number, Series> | null>(null)
  const [historyError, setHistoryError] = useState<string | null>(null)
  const [attempt, setAttempt] = useState(0)
  const expectedCharts = useRef(0)
  const drawnCharts = useRef(0)

  const load = (): void => {
    setError(null)
    api<Device>(`/devices/${id}`).then((d) => {
      setDevice(d)
      setLatest(new Map((d.data?.sensors ?? []).map((s) => [s.id, { value: s.value, at: s.last_reading_at }])))
      document.title = `${d.name} · Sensor network explorer`
    }, (err: unknown) => {
      setError(err instanceof ApiError && err.status === 404 ? 'There is no such device, or it is private.' : errorText(err))
    })
  }
  useEffect(load, [id])
  useEffect(() => { controlsToUrl(controls) }, [controls])

  // New readings while the page is open.
  useEffect(() => {
    const signedIn = session()
    return subscribeLive(id, signedIn?.token ?? null, (message: LiveReadings) => {
      setLatest((before) => {
        const next = new Map(before)
        for (const group of message.data) for (const s of group.sensors) next.set(s.id, { value: s.value, at: group.recorded_at })
        return next
      })
      setLivePoints((before) => {
        const next = new Map(before)
        for (const group of message.data) {
          const at = Date.parse(group.recorded_at) / 1000
          for (const s of group.sensors) if (s.value !== null) next.set(s.id, [...(next.get(s.id) ?? []), [at, s.value]])
        }
        return next
      })
      setDevice((d) => d === null ? d : { ...d, last_reading_at: message.data[message.data.length - 1]?.recorded_at ?? d.last_reading_at, system_tags: [...d.system_tags.filter((t) => t !== 'offline' && t !== 'online'), 'online'] })
    }, setLive)
  }, [id])

  // How often this device reports, once an answer has shown it: the automatic rollup is never finer.
  const [reporting, setReporting] = useState(0)
  useEffect(() => { setReporting(0) }, [id])
  const rangeSeconds = (controls.to - controls.from) / 1000
  const rollup = controls.rollup === 'auto' ? autoRollup(rangeSeconds, reporting) : controls.rollup
  const sensors = device?.data?.sensors ?? []
  const withData = sensors.filter((s) => s.last_reading_at !== null || latest.get(s.id)?.at != null)
  const withoutData = sensors.filter((s) => !withData.includes(s))

  // Every sensor's history in one request (sensor_ids=all): one call whatever the kit, where a
  // request per chart spent a dozen of an anonymous visitor's 90 a minute at each change.
  useEffect(() => {
    if (device === null) return
    const abort = new AbortController()
    setHistoryError(null)
    setHistories(null)
    const query = new URLSearchParams({
      sensor_ids: 'all',
      rollup,
      function: controls.fn,
      from: isoSeconds(controls.from),
      to: isoSeconds(controls.to),
      all_intervals: 'true',
      // Days, weeks and months from the viewer's midnight, as people read a chart.
      timezone: timeZone
    })
    api<Histories>(`/devices/${id}/readings?${query.toString()}`, { signal: abort.signal }).then((answer) => {
      const series = new Map(answer.sensors.map((s) => [s.sensor_id, toSeries(s)]))
      // Buckets finer than the device reports: asked again at the rollup its readings fill.
      const step = controls.rollup === 'auto' ? reportingStep(series.values()) : null
      if (step !== null && step > reporting && autoRollup(rangeSeconds, step) !== rollup) { setReporting(step); return }
      expectedCharts.current = [...series.values()].filter((s) => s.times.length > 0).length
      drawnCharts.current = 0
      setHistories(series)
    }, (err: unknown) => {
      if (abort.signal.aborted) return
      setHistoryError(errorText(err))
      // A 429 says when to try again: the charts do so by themselves.
      if (err instanceof ApiError && err.status === 429) setTimeout(() => { setAttempt((n) => n + 1) }, (err.retryAfter ?? 30) * 1000)
    })
    return () => { abort.abort() }
  }, [device === null, id, rollup, controls.fn, controls.from, controls.to, attempt])
  const chartDrawn = (): void => {
    drawnCharts.current++
    // Every chart of this answer is drawn (the explorer's benchmark reads this mark).
    if (drawnCharts.current === expectedCharts.current) performance.mark('esp:charts-drawn')
  }

  if (error !== null) return <main class='page narrow'><ErrorNote message={error} onRetry={load} /><p><Link to='/'>Back to the map</Link></p></main>
  if (device === null) return <main class='page'><p class='muted' aria-busy='true'>Loading the device…</p></main>

  const condition = conditionOf(device)
  const place = [device.location?.city, device.location?.country].filter(Boolean).join(', ')
  // The range shown: a custom one as chosen; "last day" and the like end when the button is
  // pressed, so readings that arrived live since the range was picked are in the file too.
  const exportParams = (now: number): URLSearchParams => {
    const preset = RANGES.find((r) => r.name === controls.range)
    const to = preset === undefined ? controls.to : Math.max(now, controls.to)
    const from = preset === undefined ? controls.from : to - preset.seconds * 1000
    return new URLSearchParams({ format: 'csv', from: isoSeconds(from), to: isoSeconds(to) })
  }
  const exportUrl = (now: number): string => `/v0/devices/${device.id}/readings/export?${exportParams(now).toString()}`
  // A link cannot carry the Authorization header, and a session token in an address would stay in
  // history and logs: a private device's download asks for a short-lived link of its own instead.
  const download = (e: JSX.TargetedMouseEvent<HTMLAnchorElement>): void => {
    e.currentTarget.href = exportUrl(Date.now())
    if (device.data_policy?.is_private !== true || session() === null) return
    e.preventDefault()
    api<{ url: string }>(`/devices/${device.id}/readings/export/link`, { method: 'POST' }).then((link) => {
      const url = new URL(link.url, location.href)
      for (const [key, value] of exportParams(Date.now())) url.searchParams.set(key, value)
      const anchor = document.createElement('a')
      anchor.href = `${url.pathname}${url.search}`
      anchor.download = ''
      anchor.click()
    }, (err: unknown) => { setHistoryError(errorText(err)) })
  }

  return (
    <main class='page device-page'>
      <nav class='crumbs' aria-label='Breadcrumb'><Link to='/'>Map</Link> <span aria-hidden='true'>/</span> <span>{device.name}</span></nav>
      <header class='device-head'>
        <div>
          <h1>{device.name}</h1>
          <p class='meta'>
            <Badge condition={condition} />
            {device.data_policy?.is_private === true && <span class='badge badge-private'>Private</span>}
            {live && <span class='badge badge-live' title='New readings appear as they arrive'>Live updates</span>}
            <span>by <strong>{device.owner?.username ?? 'unknown'}</strong></span>
            {place !== '' && <span>{place}</span>}
            {device.location?.latitude != null && <span class='muted'>{device.location.latitude.toFixed(3)}, {device.location.longitude?.toFixed(3)}</span>}
            <span>{device.location?.exposure === 'indoor' ? 'Indoors' : 'Outdoors'}</span>
          </p>
          {device.description !== null && device.description !== '' && <p class='description'>{device.description}</p>}
          <p class='muted small'>Last reading <Time iso={device.last_reading_at} relative /> · times shown in {timeZone}</p>
          {session()?.username === device.owner?.username && <p><Link to='/my/devices' class='button'>Manage this device</Link></p>}
        </div>
      </header>

      <section aria-labelledby='latest-title'>
        <h2 id='latest-title'>Latest values</h2>
        {sensors.length === 0 && <p class='muted'>This device has no sensors yet.</p>}
        <ul class='latest'>
          {sensors.map((s) => {
            const now = latest.get(s.id)
            return (
              <li key={s.id} class='latest-item' data-sensor-id={s.id}>
                <span class='latest-name'>{s.measurement?.name ?? s.name}</span>
                <span class='latest-value'>{formatValue(now?.value ?? null, s.unit)}</span>
                <span class='muted small'>{now?.at != null ? <Time iso={now.at} relative /> : 'no readings yet'}</span>
              </li>
            )
          })}
        </ul>
      </section>

      <section aria-labelledby='history-title'>
        <h2 id='history-title'>History</h2>
        <form class='controls' onSubmit={(e) => { e.preventDefault() }}>
          <fieldset class='ranges'>
            <legend>Range</legend>
            {RANGES.map((r) => (
              <label key={r.name} class='pill'>
                <input
                  type='radio' name='range' value={r.name} checked={controls.range === r.name}
                  onChange={() => { const to = Date.now(); setControls({ ...controls, range: r.name, from: to - r.seconds * 1000, to, rollup: rollupForRange(controls.rollup, r.seconds) }) }}
                />
                {r.label}
              </label>
            ))}
            <label class='pill'>
              <input type='radio' name='range' value='custom' checked={controls.range === 'custom'} onChange={() => { setControls({ ...controls, range: 'custom' }) }} />
              Custom
            </label>
          </fieldset>
          {controls.range === 'custom' && (
            <div class='custom-range'>
              <label class='field inline'><span class='field-label'>From</span>
                <input
                  type='datetime-local' value={toLocalInput(controls.from)} max={toLocalInput(controls.to)}
                  onChange={(e) => { const v = Date.parse(e.currentTarget.value); if (Number.isFinite(v) && v < controls.to) setControls({ ...controls, from: v, rollup: rollupForRange(controls.rollup, (controls.to - v) / 1000) }) }}
                />
              </label>
              <label class='field inline'><span class='field-label'>To</span>
                <input
                  type='datetime-local' value={toLocalInput(controls.to)} min={toLocalInput(controls.from)}
                  onChange={(e) => { const v = Date.parse(e.currentTarget.value); if (Number.isFinite(v) && v > controls.from) setControls({ ...controls, to: v, rollup: rollupForRange(controls.rollup, (v - controls.from) / 1000) }) }}
                />
              </label>
            </div>
          )}
          <label class='field inline'><span class='field-label'>Rollup</span>
            <select name='rollup' value={controls.rollup} onChange={(e) => { setControls({ ...controls, rollup: e.currentTarget.value }) }}>
              <option value='auto'>Automatic ({ROLLUPS.find((r) => r.value === rollup)?.label ?? rollup})</option>
              {ROLLUPS.map((r) => <option key={r.value} value={r.value}>{r.label}</option>)}
            </select>
          </label>
          <label class='field inline'><span class='field-label'>Function</span>
            <select name='function' value={controls.fn} onChange={(e) => { setControls({ ...controls, fn: e.currentTarget.value }) }}>
              {FUNCTIONS.map((f) => <option key={f} value={f}>{f}</option>)}
            </select>
          </label>
          <a class='button' href={exportUrl(controls.to)} download onClick={download}>Download CSV</a>
        </form>
        <ErrorNote message={historyError} onRetry={() => { setAttempt((n) => n + 1) }} />
        <div class='charts'>
          {withData.map((s) => (
            <SensorChart key={s.id} sensor={s} series={histories?.get(s.id) ?? null} live={livePoints.get(s.id)} onDrawn={chartDrawn} />
          ))}
        </div>
        {withoutData.length > 0 && <p class='muted small'>No readings yet from {withoutData.map((s) => s.measurement?.name ?? s.name).join(', ')}.</p>}
      </section>
    </main>
  )
}

/** One sensor's chart, from the page's answer for every sensor. */
function SensorChart ({ sensor, series, live, onDrawn }: { sensor: DeviceSensor, series: Series | null, live: [number, number][] | undefined, onDrawn: () => void }) {
  // Live points after the last bucket are added as they come.
  const shown = useMemo(() => {
    if (series === null || live === undefined || live.length === 0) return series
    const last = series.times[series.times.length - 1] ?? -Infinity
    const extra = live.filter(([at]) => at > last)
    if (extra.length === 0) return series
    return { times: [...series.times, ...extra.map(([at]) => at)], values: [...series.values, ...extra.map(([, v]) => v)] }
  }, [series, live])
  // Only the first drawing of an answer counts for the page's mark, not a redraw on resize or a live point.
  const reported = useRef<Series | null>(null)
  const drawn = (): void => {
    if (reported.current === series) return
    reported.current = series
    onDrawn()
  }

  const title = sensor.measurement?.name ?? sensor.name
  return (
    <article class='chart-card' data-sensor-id={sensor.id} aria-label={`${title} history`}>
      <header>
        <h3>{title}{sensor.unit !== null && sensor.unit !== '' && <span class='muted'> ({sensor.unit})</span>}</h3>
        <p class='muted small'>{sensor.name}</p>
      </header>
      {shown === null
        ? <div class='chart-placeholder' aria-busy='true'>Loading…</div>
        : shown.times.length === 0
          ? <p class='muted'>No readings in this range.</p>
          : <Chart series={shown} unit={sensor.unit} label={title} onDrawn={drawn} />}
    </article>
  )
}
