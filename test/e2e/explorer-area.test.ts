import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import t from 'tap'
import { logInAs } from '../../scripts/demo-world.js'
import { CHROMIUM, EXPLORER_ADMIN, screenshotter, startExplorerPlatform } from '@esp/test-helpers/explorer'

// Debian's chromium (.ci/run installs it); a browser is never downloaded.

/** Air Temperature: the kits' sensor 55 measures it, in ºC. */
const MEASUREMENT = 1
const SENSOR = 55
/** The explorer's colour of a device without a value (area.tsx). */
const NO_VALUE = '#9aa5b1'
const HOUR = 3_600_000

/** What page.evaluate callbacks read of the page (this file compiles without the DOM library). */
interface InPage {
  document: {
    querySelector: (selector: string) => { dataset: Record<string, string | undefined> } | null
    querySelectorAll: (selector: string) => Iterable<{ offsetParent: unknown, tagName: string, textContent: string | null, outerHTML: string, labels?: { length: number } | null, getAttribute: (name: string) => string | null }>
    documentElement: { scrollWidth: number }
    body: { innerText: string }
  }
  innerWidth: number
}

/** [device id, value, colour] of each device the map draws, coloured by value (map-view.ts). */
type Mark = [number, number | null, string]

async function marks (page: Page): Promise<Mark[]> {
  return JSON.parse(await page.locator('.map').getAttribute('data-marks') ?? '[]') as Mark[]
}

/** The legend's colours, lowest class first. */
async function legendColours (page: Page, name: string): Promise<string[]> {
  return await page.getByRole('list', { name }).locator('li').evaluateAll((items) => items.map((li) => (li as unknown as { dataset: { colour: string } }).dataset.colour))
}

/** The ids of a compact map's devices (the first id, then differences). */
const compactIds = (map: { id: number[] }): number[] => { let id = 0; return map.id.map((d) => (id += d)) }

t.test('the explorer\'s map coloured by a measurement, with an interpolated surface', async (t) => {
  const started = await startExplorerPlatform(t)
  if (started === null) return
  const { base } = started
  const token = await logInAs(base, EXPLORER_ADMIN.username, EXPLORER_ADMIN.password)
  const call = async <T>(method: string, route: string, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}/v0${route}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${route}: ${res.status} ${text}`)
    return JSON.parse(text) as T
  }

  // A small city: six public devices about 1.5 km apart in Barcelona, each with readings of the
  // last hours (an hour ago a degree below its value, two minutes ago a degree above: its 24 h mean
  // of hourly means is the value, its latest a degree more), one without readings, and a private
  // device among them whose value must never reach a visitor.
  const now = Date.now()
  const values = [12, 15, 18, 21, 24, 27]
  const devices: Array<{ id: number, name: string, value: number }> = []
  const place = async (name: string, latitude: number, longitude: number, isPrivate = false): Promise<number> =>
    (await call<{ id: number }>('POST', '/devices', { name, exposure: 'outdoor', latitude, longitude, is_private: isPrivate, description: 'A kit in Barcelona' })).id
  const post = async (id: number, readings: Array<[number, number]>): Promise<void> => {
    await call('POST', `/devices/${id}/readings`, { data: readings.map(([at, value]) => ({ recorded_at: new Date(at).toISOString(), sensors: [{ id: SENSOR, value }] })) })
  }
  for (const [i, value] of values.entries()) {
    const name = `Barcelona kit ${i + 1}`
    const id = await place(name, 41.37 + Math.floor(i / 3) * 0.018, 2.15 + (i % 3) * 0.018)
    await post(id, [[now - 70 * 60_000, value - 1], [now - 2 * 60_000, value + 1]])
    devices.push({ id, name, value })
  }
  const silent = await place('Barcelona kit without readings', 41.37 + 0.009, 2.15 + 0.027)
  const hidden = { name: 'Secret balcony', value: 99.5 }
  const hiddenId = await place(hidden.name, 41.379, 2.159, true)
  await post(hiddenId, [[now - 70 * 60_000, hidden.value], [now - 2 * 60_000, hidden.value]])

  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
  })
  t.teardown(async () => { await browser.close() })

  const shoot = screenshotter(t, 'esp-explorer-area-')

  // An anonymous visitor; every answer of the API kept, to look for the private device in them.
  const newContext = async (viewport = { width: 1280, height: 800 }): Promise<BrowserContext> =>
    await browser.newContext({ viewport, locale: 'en-US', timezoneId: 'Europe/Madrid' })
  const problems: string[] = []
  const answers: Array<{ url: string, body: string }> = []
  const watch = (page: Page): void => {
    page.on('pageerror', (err) => { problems.push(err.message) })
    page.on('console', (message) => { if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text()) })
    page.on('response', (response) => {
      if (!response.url().includes('/v0/')) return
      void response.text().then((body) => { answers.push({ url: response.url(), body }) }, () => {})
    })
  }
  const visitor = await newContext()
  const page = await visitor.newPage()
  watch(page)

  /** To the city: the "on map" button of a recently active device zooms to it. */
  const toCity = async (on: Page, name = devices[1]?.name ?? ''): Promise<void> => {
    await on.getByRole('button', { name: `Show ${name} on the map` }).click()
  }

  await t.test('choosing a measurement colours the devices by their latest values, with a legend', async (t) => {
    await page.goto(`${base}/explorer/`)
    await page.waitForSelector('body[data-map-ready="true"]')
    t.equal(await page.getByLabel('Values').count(), 0, 'no source to choose before a measurement')
    t.equal(await page.getByLabel('Interpolated surface').count(), 0, 'nor a surface')
    const catalogue = page.waitForRequest((r) => r.url().includes('/v0/measurements'))
    await page.getByLabel('Colour by').focus()
    await catalogue
    await page.getByLabel('Colour by').locator('option', { hasText: 'Air Temperature' }).waitFor({ state: 'attached' })
    const options = await page.getByLabel('Colour by').locator('option').allTextContents()
    t.same(options.slice(0, 6), ['state (online/offline)', 'Air Temperature', 'Relative Humidity', 'PM 2.5', 'PM 10', 'PM 1'], 'the state, then the measurements by their catalogue names')
    t.ok(options.includes('no2'), 'NO2 too')

    const latest = page.waitForResponse((r) => r.url().includes(`/v0/devices/compact_map?measurement=${MEASUREMENT}`))
    await page.getByLabel('Colour by').selectOption({ label: 'Air Temperature' })
    t.equal((await latest).status(), 200, 'the latest values come from the compact map')
    await page.getByRole('list', { name: 'Air Temperature colours' }).waitFor()
    // At the world's zoom the city is one group, coloured by its members' mean.
    const group = page.locator('.cluster-value span:not([data-mean=""])').first()
    await group.waitFor()
    const mean = Number(await group.getAttribute('data-mean'))
    const expectedMean = values.reduce((a, b) => a + b + 1, 0) / values.length
    t.ok(Math.abs(mean - expectedMean) < 1e-9, `the group is coloured by its devices' mean (${mean})`)

    await toCity(page)
    await page.waitForFunction(() => JSON.parse((globalThis as unknown as InPage).document.querySelector('.map')?.dataset.marks ?? '[]').length >= 7)
    const drawn = await marks(page)
    const legend = await legendColours(page, 'Air Temperature colours')
    t.equal(legend[legend.length - 1], NO_VALUE, 'the legend ends with "no value"')
    for (const device of devices) {
      const mark = drawn.find(([id]) => id === device.id)
      t.equal(mark?.[1], device.value + 1, `${device.name} shows its latest value`)
    }
    t.same(drawn.find(([id]) => id === silent), [silent, null, NO_VALUE], 'a device without a value is grey')
    const ranked = devices.map((d) => legend.indexOf(drawn.find(([id]) => id === d.id)?.[2] ?? ''))
    t.ok(ranked.every((k) => k >= 0), 'every colour is a class of the legend')
    t.ok(ranked.every((k, i) => i === 0 || k >= (ranked[i - 1] ?? 0)), `the colours follow the values' order (${ranked.join(', ')})`)
    t.ok((ranked[ranked.length - 1] ?? 0) > (ranked[0] ?? 0), 'from the lowest class to a higher one')
    const items = await page.getByRole('list', { name: 'Air Temperature colours' }).locator('li').allTextContents()
    t.ok(items.slice(0, -1).every((text) => /^-?[\d.,]+ – -?[\d.,]+ ºC$/.test(text.trim())), `classes are written with rounded bounds and the unit: ${items.join(' | ')}`)
    t.equal(items[items.length - 1]?.trim(), 'no value')
    t.ok(items.length <= 8, 'at most 7 classes')
    await t.resolves(page.waitForURL((url) => url.searchParams.get('measurement') === String(MEASUREMENT)), 'the measurement is in the address')
  })

  await t.test('the last 24 h average: each device\'s hourly means over the day, for the box in view', async (t) => {
    const statistics = page.waitForResponse((r) => r.url().includes('/v0/readings/statistics?'))
    await page.getByLabel('Values').selectOption('day')
    const answer = await statistics
    t.equal(answer.status(), 200)
    const asked = new URL(answer.url()).searchParams
    t.equal(asked.get('measurement_id'), String(MEASUREMENT))
    t.equal(asked.get('rollup'), '1h')
    t.equal(asked.get('per_device'), 'true')
    t.equal(Date.parse(asked.get('to') ?? '') - Date.parse(asked.get('from') ?? ''), 24 * HOUR, 'over the last 24 hours')
    const [west, south, east, north] = (asked.get('bbox') ?? '').split(',').map(Number) as [number, number, number, number]
    t.ok(west < 2.15 && east > 2.19 && south < 41.37 && north > 41.39 && east - west < 1, 'for the box in view')
    await page.waitForFunction((expected) => {
      const drawn = JSON.parse((globalThis as unknown as InPage).document.querySelector('.map')?.dataset.marks ?? '[]') as Mark[]
      return drawn.some(([, value]) => value === expected)
    }, devices[0]?.value ?? 0)
    const drawn = await marks(page)
    for (const device of devices) t.equal(drawn.find(([id]) => id === device.id)?.[1], device.value, `${device.name}: the mean of its hourly means`)
    t.match(await page.locator('.area-legend').first().innerText(), /over the last 24 hours/, 'the legend says which values')
    await t.resolves(page.waitForURL((url) => url.searchParams.get('values') === '24h'), 'the source is in the address')

    // Moving the map asks again, once it stops, for the new box.
    const again = page.waitForResponse((r) => r.url().includes('/v0/readings/statistics?'))
    await toCity(page, devices[5]?.name)
    t.not(new URL((await again).url()).searchParams.get('bbox'), asked.get('bbox'), 'a move asks for the new box')
  })

  await t.test('the interpolated surface: cells under the markers, their own legend, and the note', async (t) => {
    const grid = page.waitForResponse((r) => r.url().includes('/v0/readings/interpolation?'))
    await page.getByLabel('Interpolated surface').check()
    const answer = await grid
    t.equal(answer.status(), 200)
    const asked = new URL(answer.url()).searchParams
    t.equal(asked.get('rollup'), '1d')
    t.equal(Date.parse(asked.get('from') ?? '') % (24 * HOUR), 0, 'from the start of the UTC day: one step')
    const body = await answer.json() as { steps: string[], features: unknown[], classes: unknown[], devices: Array<{ id: number }>, cell_size: number, bbox: number[] }
    t.equal(body.steps.length, 1, 'one step')
    const [west = 0, south = 0, east = 0, north = 0] = body.bbox
    const cells = ((east - west) * 111.195 * Math.cos((south + north) / 2 * Math.PI / 180) / body.cell_size) * ((north - south) * 111.195 / body.cell_size)
    t.ok(cells <= 61 * 61, `at most about 60 × 60 cells (${Math.round(cells)})`)
    await page.waitForFunction(() => Number((globalThis as unknown as InPage).document.querySelector('.map')?.dataset.surfaceCells ?? 0) > 0)
    const drawnCells = Number(await page.locator('.map').getAttribute('data-surface-cells'))
    t.equal(drawnCells, body.features.length, `the layer draws the answer's ${drawnCells} cells`)
    t.ok(drawnCells > 10, 'a surface of many cells')
    const surfaceLegend = await page.getByRole('list', { name: 'Surface colours' }).locator('li').allTextContents()
    t.equal(surfaceLegend.length, body.classes.length, 'the surface legend is the answer\'s classes')
    t.ok(surfaceLegend.every((text) => text.trim().endsWith('ºC')), 'with the unit')
    const note = await page.locator('.surface-note').innerText()
    t.match(note, new RegExp(`inverse-distance weighted from ${body.devices.length} devices; empty where no device is within [\\d.,]+ km`), note)
    t.ok(body.devices.length >= devices.length - 1, 'the city\'s devices')
    await t.resolves(page.waitForURL((url) => url.searchParams.get('surface') === 'on'), 'the surface is in the address')
    // The panel from its colour controls down, as someone reading the legend sees it.
    await page.locator('.colour-by').evaluate((el) => { const box = el as unknown as { offsetTop: number, parentElement: { scrollTop: number, offsetTop: number } }; box.parentElement.scrollTop = box.offsetTop - box.parentElement.offsetTop - 8 })
    await shoot(page, 'area-desktop')
  })

  await t.test('the address reopens the view', async (t) => {
    const search = new URL(page.url()).searchParams
    t.same([search.get('measurement'), search.get('values'), search.get('surface')], [String(MEASUREMENT), '24h', 'on'])
    await page.reload()
    await page.waitForSelector('body[data-map-ready="true"]')
    t.equal(await page.getByLabel('Colour by').inputValue(), String(MEASUREMENT), 'the measurement')
    t.equal(await page.getByLabel('Values').inputValue(), 'day', 'the source')
    t.ok(await page.getByLabel('Interpolated surface').isChecked(), 'the surface')
    await t.resolves(page.getByText('Zoom in to see the surface.').waitFor(), 'at the world\'s zoom, a surface asks to zoom in')
    await toCity(page)
    await t.resolves(page.waitForFunction(() => Number((globalThis as unknown as InPage).document.querySelector('.map')?.dataset.surfaceCells ?? 0) > 0), 'zoomed in, the surface is drawn again')
    await page.getByLabel('Colour by').selectOption('state')
    await t.resolves(page.waitForURL((url) => url.search === ''), 'back to the state: the address is plain again')
    t.equal(await page.locator('.map').getAttribute('data-surface-cells'), null, 'and the surface is gone')
    t.equal(await page.getByRole('list', { name: 'Colours', exact: true }).count(), 1, 'the state legend is back')
  })

  await t.test('a box too big for the grid is said in words', async (t) => {
    const other = await visitor.newPage()
    watch(other)
    await other.route('**/v0/readings/interpolation?**', async (route) => {
      await route.fulfill({ status: 400, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'bad_request', message: 'This grid has 90000 cells; at most 40000 are answered.', errors: { cell_size: ['gives 90000 cells'] }, url: null }) })
    })
    await other.goto(`${base}/explorer/?measurement=${MEASUREMENT}&surface=on`)
    await other.waitForSelector('body[data-map-ready="true"]')
    await toCity(other)
    const panel = other.getByRole('region', { name: 'Surface legend' })
    await t.resolves(panel.getByText('Zoom in to see the surface.').waitFor(), 'the 400 is a plain sentence')
    t.notMatch(await panel.innerText(), /400|HTTP|Bad Request|cells|cell_size/i, 'without HTTP words')
    await other.close()
  })

  await t.test('on a phone: the legends under the map, nothing wider than the screen, every control labelled', async (t) => {
    const phone = await newContext({ width: 390, height: 844 })
    const small = await phone.newPage()
    watch(small)
    await small.goto(`${base}/explorer/?measurement=${MEASUREMENT}&values=24h&surface=on`)
    await small.waitForSelector('body[data-map-ready="true"]')
    await toCity(small)
    await small.waitForFunction(() => Number((globalThis as unknown as InPage).document.querySelector('.map')?.dataset.surfaceCells ?? 0) > 0)
    await small.getByRole('list', { name: 'Surface colours' }).waitFor()
    await small.evaluate(() => { (globalThis as unknown as { scrollTo: (x: number, y: number) => void }).scrollTo(0, 0) })
    const overflow = await small.evaluate(() => { const page = globalThis as unknown as InPage; return page.document.documentElement.scrollWidth - page.innerWidth })
    t.ok(overflow <= 0, `no sideways scrolling (${overflow} px)`)
    const unlabelled = await small.evaluate(() => [...(globalThis as unknown as InPage).document.querySelectorAll('input, select, textarea, button')]
      .filter((el) => el.offsetParent !== null)
      .filter((el) => (el.labels?.length ?? 0) === 0 && (el.getAttribute('aria-label') ?? '') === '' && !(el.tagName === 'BUTTON' && (el.textContent ?? '').trim() !== ''))
      .map((el) => el.outerHTML.slice(0, 80)))
    t.same(unlabelled, [], 'every control has a label')
    await shoot(small, 'area-phone', true)
    await phone.close()
  })

  await t.test('the private device reaches the visitor nowhere', async (t) => {
    t.ok(answers.length > 5, `the pages' answers were kept (${answers.length})`)
    for (const { url, body } of answers) {
      t.notOk(body.includes(hidden.name) || body.includes(String(hidden.value)), `no trace of it in ${new URL(url).pathname}`)
      if (url.includes('/compact_map')) t.notOk(compactIds(JSON.parse(body) as { id: number[] }).includes(hiddenId), 'not on the compact map')
      if (url.includes('/readings/statistics')) t.notOk(body.includes(`[${hiddenId},`), 'nor in the statistics')
      if (url.includes('/readings/interpolation')) t.notOk((JSON.parse(body) as { devices: Array<{ id: number }> }).devices.some((d) => d.id === hiddenId), 'nor among the surface\'s devices')
    }
    t.notMatch(await page.evaluate(() => (globalThis as unknown as InPage).document.body.innerText), /Secret balcony|99\.5/, 'nor in the page')
  })

  await page.close()
  t.same(problems, [], 'no script errors in the pages')
})
