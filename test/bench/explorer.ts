import { request } from 'node:http'
import { type Browser, chromium, type Page } from 'playwright-core'
import { KIT_SENSORS, kitValue } from '../../scripts/demo-world.js'
import { makeDevices, type BenchPlatform, writeReadings } from './setup.js'
import { percentile, progress, round } from './stats.js'
import { seedMapDevices } from './worldmap.js'

// Debian's chromium; a browser is never downloaded.
const CHROMIUM = '/usr/bin/chromium'
// Tall enough that the 12 charts of the device page are all in view, so they all load at once.
const VIEWPORT = { width: 1280, height: 4200 }
const HOUR = 3_600_000
const STEP = 10 * 60_000

export interface Timings { p50: number, max: number, runs: number[], ratioToBaseline: number }

export interface ExplorerFigures {
  browser: string
  runs: number
  /** devices on the world map, and as the map page's panel counts them */
  devices: number
  shownDevices: number
  /** bytes as received (encodedBodySize) of what the map page loads before esp:map-ready */
  firstLoad: { bytes: number, document: number, scripts: number, stylesheets: number, files: string[], encodings: string[] }
  /** for information: loaded by the map page beside its first load */
  countriesBytes: number
  /** the map page's data, GET /v0/devices/compact_map: as the browser received it, and gzip */
  compactMapReceivedBytes: number
  compactMapReceivedEncoding: string
  compactMapGzipBytes: number
  /** GET /v0/devices/world_map (what the map page loaded before the compact map), gzip */
  worldMapGzipBytes: number
  /** navigation start to the load event of GET /health/live, the same browser and server */
  baseline: Timings
  map: Timings
  device: { sensors: number, days: number, values: number, loadValuesPerSecond: number, year: Timings & { rollup: string, points: number }, month: Timings & { rollup: string, points: number } }
  /** where the time of the median map and device-page runs goes, ms since navigation start */
  profile: { map: Record<string, number>, year: Record<string, number>, month: Record<string, number> }
}

/** A performance entry as its toJSON gives it. */
interface Entry {
  name: string
  entryType: string
  initiatorType?: string
  startTime: number
  duration: number
  requestStart?: number
  responseStart?: number
  responseEnd?: number
  encodedBodySize?: number
  domContentLoadedEventEnd?: number
  loadEventEnd?: number
}

/**
 * What callbacks of page.evaluate use of the browser: they run in the page, and this file compiles
 * without the DOM library, so each reads these from `globalThis` under this type.
 */
interface InPage {
  performance: { getEntries: () => Array<{ toJSON: () => Entry }>, getEntriesByName: (name: string) => Array<{ startTime: number }>, getEntriesByType: (type: string) => Array<{ toJSON: () => Entry }> }
  document: { querySelectorAll: (selector: string) => { length: number }, querySelector: (selector: string) => { textContent: string | null, uplot?: { data: unknown[][] } } | null }
}

/** A page's figure (ms since navigation start), its performance entries, what it shows */
interface Visit { ms: number, entries: Entry[], text: string, points?: number }

const timings = (runs: number[], baselineP50: number): Timings => {
  const p50 = round(percentile(runs, 50))
  return { p50, max: round(Math.max(...runs)), runs: runs.map((r) => round(r)), ratioToBaseline: round(p50 / baselineP50) }
}

const pathOf = (entry: Entry): string => new URL(entry.name).pathname

const COMPACT_MAP = '/v0/devices/compact_map'

/** The bytes of a GET as sent, gzip asked for (a socket of its own, nothing decoded). */
async function gzipBytes (url: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
      let bytes = 0
      res.on('data', (chunk: Buffer) => { bytes += chunk.length })
      res.on('end', () => { resolve(res.headers['content-encoding'] === 'gzip' ? bytes : NaN) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** Opens `url` in a context of its own (a cold cache), waits for `ready` and returns what it reads. */
async function visit (browser: Browser, url: string, ready: (page: Page) => Promise<Visit>): Promise<Visit> {
  const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-US' })
  try {
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (err) => { problems.push(err.message) })
    page.on('response', (response) => { if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`) })
    await page.goto(url)
    const seen = await ready(page).catch((err: unknown) => { throw new Error(`${url}: ${String(err)}${problems.length > 0 ? `; ${problems.join('; ')}` : ''}`) })
    if (problems.length > 0) throw new Error(`${url}: ${problems.join('; ')}`)
    return seen
  } finally {
    await context.close()
  }
}

/** The liveness route's load event: the browser's and server's floor for any page. */
const baselineVisit = async (page: Page): Promise<Visit> => {
  await page.waitForFunction(() => ((globalThis as unknown as InPage).performance.getEntriesByType('navigation')[0]?.toJSON().loadEventEnd ?? 0) > 0, undefined, { polling: 50 })
  const entries = await page.evaluate(() => (globalThis as unknown as InPage).performance.getEntries().map((e) => e.toJSON()))
  return { ms: entries.find((e) => e.entryType === 'navigation')?.loadEventEnd ?? NaN, entries, text: '' }
}

const mapVisit = async (page: Page): Promise<Visit> => {
  await page.waitForFunction(() => (globalThis as unknown as InPage).performance.getEntriesByName('esp:map-ready').length > 0, undefined, { polling: 100, timeout: 60_000 })
  return await page.evaluate(() => {
    const g = globalThis as unknown as InPage
    return { ms: g.performance.getEntriesByName('esp:map-ready')[0]?.startTime ?? NaN, entries: g.performance.getEntries().map((e) => e.toJSON()), text: g.document.querySelector('.count')?.textContent ?? '' }
  })
}

/**
 * The device page once its 12 charts are drawn: uPlot draws in a microtask after it adds its
 * .u-over, so when a poll (a task of its own) sees 12 of them, the last esp:charts-drawn is made.
 */
const chartsVisit = async (page: Page): Promise<Visit> => {
  await page.waitForFunction(() => {
    const g = globalThis as unknown as InPage
    return g.document.querySelectorAll('.chart .u-over').length >= 12 && g.performance.getEntriesByName('esp:charts-drawn').length > 0
  }, undefined, { polling: 100, timeout: 60_000 })
  return await page.evaluate(() => {
    const g = globalThis as unknown as InPage
    const marks = g.performance.getEntriesByName('esp:charts-drawn')
    return {
      ms: marks[marks.length - 1]?.startTime ?? NaN,
      entries: g.performance.getEntries().map((e) => e.toJSON()),
      text: String(g.document.querySelectorAll('.chart .u-over').length),
      points: g.document.querySelector('.chart')?.uplot?.data[0]?.length ?? 0
    }
  })
}

/** The run whose figure is the median, for the profile. */
const medianRun = (visits: Visit[]): Visit => {
  const sorted = [...visits].sort((a, b) => a.ms - b.ms)
  const run = sorted[Math.ceil(sorted.length / 2) - 1]
  if (run === undefined) throw new Error('no runs')
  return run
}

const navigation = (v: Visit): Entry | undefined => v.entries.find((e) => e.entryType === 'navigation')
const last = (entries: Entry[], field: 'responseEnd' | 'startTime'): number => round(Math.max(0, ...entries.map((e) => e[field] ?? 0)))
const first = (entries: Entry[], field: 'responseEnd' | 'startTime'): number => round(Math.min(...entries.map((e) => e[field] ?? 0)))
const isCode = (e: Entry): boolean => /\.(js|css)$/.test(pathOf(e))

function mapProfile (v: Visit): Record<string, number> {
  const nav = navigation(v)
  const code = v.entries.filter((e) => e.entryType === 'resource' && isCode(e) && e.startTime < v.ms)
  const compact = v.entries.find((e) => e.entryType === 'resource' && pathOf(e) === COMPACT_MAP)
  const countries = v.entries.find((e) => e.entryType === 'resource' && /\/assets\/[^/]*\.json$/.test(pathOf(e)))
  return {
    documentIn: round(nav?.responseEnd ?? NaN),
    scriptsAndStylesheetsIn: last(code, 'responseEnd'),
    domContentLoaded: round(nav?.domContentLoadedEventEnd ?? NaN),
    compactMapAsked: round(compact?.startTime ?? NaN),
    compactMapFirstByte: round(compact?.responseStart ?? NaN),
    compactMapIn: round(compact?.responseEnd ?? NaN),
    countriesAsked: round(countries?.startTime ?? NaN),
    countriesIn: round(countries?.responseEnd ?? NaN),
    mapReady: round(v.ms)
  }
}

function chartsProfile (v: Visit): Record<string, number> {
  const nav = navigation(v)
  const resources = v.entries.filter((e) => e.entryType === 'resource')
  const code = resources.filter((e) => isCode(e))
  const device = resources.find((e) => /^\/v0\/devices\/\d+$/.test(pathOf(e)))
  const readings = resources.filter((e) => pathOf(e).endsWith('/readings'))
  return {
    documentIn: round(nav?.responseEnd ?? NaN),
    scriptsAndStylesheetsIn: last(code, 'responseEnd'),
    deviceAsked: round(device?.startTime ?? NaN),
    deviceIn: round(device?.responseEnd ?? NaN),
    readingsRequests: readings.length,
    firstReadingsAsked: first(readings, 'startTime'),
    firstReadingsIn: first(readings, 'responseEnd'),
    lastReadingsIn: last(readings, 'responseEnd'),
    // Waiting for a connection (Chromium opens six to a host), and the server's time to first byte.
    readingsLongestQueued: round(Math.max(0, ...readings.map((e) => (e.requestStart ?? 0) - e.startTime))),
    readingsLongestToFirstByte: round(Math.max(0, ...readings.map((e) => (e.responseStart ?? 0) - (e.requestStart ?? 0)))),
    chartsDrawn: round(v.ms)
  }
}

/**
 * Case 7, the explorer in Debian's Chromium, timed by the page itself (the Performance API): the
 * bytes of its first load; navigation start to esp:map-ready with 10,000 devices on the map (drawn
 * from GET /v0/devices/compact_map, whose gzip size is stated beside the world map's); to
 * esp:charts-drawn on the page of a kit of 12 sensors with a year of 10-minute readings (written
 * through the write path), for the year (daily buckets) and the month (hourly); next to the same
 * browser's load of GET /health/live from the same server. Each run in a fresh context (a cold
 * cache), the runs of the four interleaved, after one warm-up of each that is not counted.
 */
export async function benchExplorer (p: BenchPlatform, quick: boolean): Promise<ExplorerFigures> {
  const wanted = quick ? 300 : 10_000
  const days = quick ? 14 : 365
  const runs = quick ? 2 : 7
  const onMap = async (): Promise<number> => (await (await fetch(`${p.base}${COMPACT_MAP}`)).json() as { count: number }).count
  // The world map case of the same run may have seeded them already.
  const there = await onMap()
  if (there < wanted) {
    progress(`explorer: seeding ${wanted - there} devices for the map (${there} there)`)
    await seedMapDevices(p, wanted - there, there + 1)
  }
  const devices = await onMap()

  // The kit: no location (not one more device on the map), readings up to the current hour.
  const [device = 0] = await makeDevices(p.database, p.userId, 1)
  const end = Math.floor(Date.now() / HOUR) * HOUR
  const start = end - days * 24 * HOUR
  const count = (end - start) / STEP + 1
  progress(`explorer: loading ${count} timestamps of ${KIT_SENSORS.length} sensors`)
  const loadSeconds = await writeReadings(p, device, count, new Date(), (i) => {
    const at = start + i * STEP
    return { recorded_at: new Date(at).toISOString(), sensors: KIT_SENSORS.map((s) => ({ id: s.id, value: kitValue(s, at) })) }
  })

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
  })
  const version = `Chromium ${browser.version()}`
  const pages = [
    ['baseline', `${p.base}/health/live`, baselineVisit],
    ['map', `${p.base}/explorer/`, mapVisit],
    ['year', `${p.base}/explorer/devices/${device}?range=year`, chartsVisit],
    ['month', `${p.base}/explorer/devices/${device}?range=month`, chartsVisit]
  ] as const
  const seen: Record<typeof pages[number][0], Visit[]> = { baseline: [], map: [], year: [], month: [] }
  // The encodings the server chose for the first load, as the browser asked.
  const encodings = new Set<string>()
  let compactEncoding: Promise<string> = Promise.resolve('')
  try {
    for (let run = -1; run < runs; run++) {
      for (const [name, url, ready] of pages) {
        const v = await visit(browser, url, ready)
        if (run >= 0) seen[name].push(v)
      }
      if (run >= 0) progress(`explorer: run ${run + 1} of ${runs}: map ${round(seen.map.at(-1)?.ms ?? NaN)} ms, year ${round(seen.year.at(-1)?.ms ?? NaN)} ms, month ${round(seen.month.at(-1)?.ms ?? NaN)} ms`)
    }
    // Once more, untimed, to see what the browser asked for and the server chose.
    const context = await browser.newContext({ viewport: VIEWPORT })
    const page = await context.newPage()
    const asked: Array<Promise<string>> = []
    page.on('response', (response) => {
      const file = new URL(response.url()).pathname
      if (file === '/explorer/' || /\.(js|css)$/.test(file)) {
        asked.push(response.request().allHeaders().then(async (headers) => `${file.replace(/^.*\./, '.')}: asked ${headers['accept-encoding'] ?? 'nothing'}, got ${await response.headerValue('content-encoding') ?? 'identity'}`))
      }
    })
    page.on('response', (response) => {
      if (new URL(response.url()).pathname === COMPACT_MAP) compactEncoding = response.headerValue('content-encoding').then((e) => e ?? 'identity')
    })
    await page.goto(`${p.base}/explorer/`)
    await mapVisit(page)
    for (const line of await Promise.all(asked)) encodings.add(line)
    await context.close()
  } finally {
    await browser.close()
  }

  for (const v of [...seen.year, ...seen.month]) if (v.text !== '12') throw new Error(`explorer: ${v.text} charts drawn, not 12`)
  // The figure must not come from an empty map: every run's panel counts the compact map's devices.
  const counted = seen.map.map((v) => Number((/[\d,]+ of ([\d,]+) devices/.exec(v.text)?.[1] ?? '0').replace(/,/g, '')))
  const shownDevices = Math.min(...counted)
  if (shownDevices !== devices || devices < wanted) throw new Error(`explorer: the map page counted ${counted.join(', ')} devices, the compact map has ${devices}, ${wanted} wanted`)

  // The first load: the document, and every script and stylesheet asked for before the map was ready.
  const firstMap = seen.map[0]
  if (firstMap === undefined) throw new Error('explorer: no map runs')
  const resources = firstMap.entries.filter((e) => e.entryType === 'resource')
  const code = resources.filter((e) => isCode(e) && e.startTime < firstMap.ms)
  const bytesOf = (entries: Entry[]): number => entries.reduce((sum, e) => sum + (e.encodedBodySize ?? 0), 0)
  const documentBytes = navigation(firstMap)?.encodedBodySize ?? 0
  const scripts = bytesOf(code.filter((e) => pathOf(e).endsWith('.js')))
  const stylesheets = bytesOf(code.filter((e) => pathOf(e).endsWith('.css')))

  const baseline = timings(seen.baseline.map((v) => v.ms), percentile(seen.baseline.map((v) => v.ms), 50))
  const chartFigures = (name: 'year' | 'month'): ExplorerFigures['device']['year'] => {
    const readings = seen[name][0]?.entries.find((e) => e.entryType === 'resource' && pathOf(e).endsWith('/readings'))
    return {
      ...timings(seen[name].map((v) => v.ms), baseline.p50),
      rollup: new URL(readings?.name ?? p.base).searchParams.get('rollup') ?? '',
      points: seen[name][0]?.points ?? 0
    }
  }
  const year = chartFigures('year')
  const month = chartFigures('month')
  const figures: ExplorerFigures = {
    browser: version,
    runs,
    devices,
    shownDevices,
    firstLoad: {
      bytes: documentBytes + scripts + stylesheets,
      document: documentBytes,
      scripts,
      stylesheets,
      files: ['/explorer/', ...code.map(pathOf)],
      encodings: [...encodings].sort()
    },
    countriesBytes: bytesOf(resources.filter((e) => /\/assets\/[^/]*\.json$/.test(pathOf(e)))),
    compactMapReceivedBytes: bytesOf(resources.filter((e) => pathOf(e) === COMPACT_MAP)),
    compactMapReceivedEncoding: await compactEncoding,
    compactMapGzipBytes: await gzipBytes(`${p.base}${COMPACT_MAP}`),
    worldMapGzipBytes: await gzipBytes(`${p.base}/v0/devices/world_map`),
    baseline,
    map: timings(seen.map.map((v) => v.ms), baseline.p50),
    device: { sensors: KIT_SENSORS.length, days, values: count * KIT_SENSORS.length, loadValuesPerSecond: Math.round(count * KIT_SENSORS.length / loadSeconds), year, month },
    profile: { map: mapProfile(medianRun(seen.map)), year: chartsProfile(medianRun(seen.year)), month: chartsProfile(medianRun(seen.month)) }
  }
  progress(`explorer: first load ${figures.firstLoad.bytes} bytes, compact map ${figures.compactMapGzipBytes} bytes gzip (world map ${figures.worldMapGzipBytes}), map p50 ${figures.map.p50} ms, year p50 ${year.p50} ms, month p50 ${month.p50} ms, baseline p50 ${baseline.p50} ms`)
  return figures
}
