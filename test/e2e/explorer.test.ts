import { readFileSync } from 'node:fs'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import t from 'tap'
import { makeExplorerWorld } from '../../scripts/demo-world.js'
import { CHROMIUM, EXPLORER_ADMIN, screenshotter, startExplorerPlatform } from '@esp/test-helpers/explorer'

// Debian's chromium (.ci/run installs it); a browser is never downloaded.
const ADMIN = EXPLORER_ADMIN

interface Readings { readings: [string, number | null][] }
/** The device page's one request for every sensor's history. */
interface Histories { sensors: Array<Readings & { sensor_id: number }> }
const ofSensor = (answer: Histories, id: number): Readings => answer.sensors.find((s) => s.sensor_id === id) ?? { readings: [] }

/**
 * What callbacks of page.evaluate use of the browser: they run in the page, and this file compiles
 * without the DOM library, so each reads these from `globalThis` under this type.
 */
interface InPage {
  document: {
    querySelector: (selector: string) => { uplot?: { data: (number | null)[][] } } | null
    querySelectorAll: (selector: string) => Iterable<{ offsetParent: unknown, tagName: string, textContent: string | null, outerHTML: string, labels?: { length: number } | null, getAttribute: (name: string) => string | null }>
    activeElement: { textContent: string | null } | null
    documentElement: { scrollWidth: number }
  }
  localStorage: { getItem: (key: string) => string | null }
  innerWidth: number
}
type Plotted = [number[], (number | null)[]]

/** What the chart of a sensor was given to draw: uPlot's data, x in seconds, oldest first. */
async function plotted (page: Page, sensorId: number): Promise<Plotted> {
  return await page.locator(`.chart-card[data-sensor-id="${sensorId}"] .chart`).evaluate((el) => {
    const data = (el as unknown as { uplot: { data: [number[], (number | null)[]] } }).uplot.data
    return [Array.from(data[0]), Array.from(data[1])] as Plotted
  })
}

/** The API's answer as the chart must draw it. */
const asPlotted = (answer: Readings): Plotted => {
  const oldestFirst = [...answer.readings].reverse()
  return [oldestFirst.map(([at]) => Date.parse(at) / 1000), oldestFirst.map(([, v]) => v)]
}

t.test('the explorer in a real browser: map, search, device page, charts, live readings, download, sign-in and private devices', async (t) => {
  const started = await startExplorerPlatform(t)
  if (started === null) return
  const { base, platform } = started
  t.match(platform.output(), `explorer  ${base}/explorer/`, 'the start-up lines print the explorer\'s address')
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
  })
  t.teardown(async () => { await browser.close() })

  // A fresh platform has nothing to show: the map says what to do.
  const first = await browser.newPage()
  await first.goto(`${base}/explorer/`)
  await t.resolves(first.getByRole('heading', { name: 'No public devices yet' }).waitFor(), 'an empty network says how to fill it')
  t.ok(await first.getByText('pnpm demo').count() > 0, 'including pnpm demo')
  await first.close()

  const world = await makeExplorerWorld(base, ADMIN)
  const showcase = world.showcase
  const admin = { authorization: `Bearer ${world.ownerToken}`, 'content-type': 'application/json' }

  const shoot = screenshotter(t, 'esp-explorer-')

  // Madrid's clock, so that local times and their UTC tooltips differ.
  const newContext = async (viewport = { width: 1280, height: 900 }): Promise<BrowserContext> =>
    await browser.newContext({ viewport, locale: 'en-US', timezoneId: 'Europe/Madrid', acceptDownloads: true })
  const visitor = await newContext()
  const page = await visitor.newPage()
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (request) => { requests.push(request.url()) })
  page.on('pageerror', (err) => { problems.push(err.message) })
  page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()) })

  await t.test('the map shows every public device, and a search finds one', async (t) => {
    // A browser asking for / is sent to the explorer; curl and apps keep getting the links.
    await page.goto(`${base}/`)
    t.equal(new URL(page.url()).pathname, '/explorer/', 'GET / with Accept: text/html lands on the explorer')
    const links = await (await fetch(`${base}/`)).json() as { devices_url?: string }
    t.match(links.devices_url, /\/v0\/devices$/, 'an API client still gets the root links')
    await page.waitForSelector('body[data-map-ready="true"]')
    const map = await (await fetch(`${base}/v0/devices/world_map`)).json() as unknown[]
    t.equal(map.length, world.devices.length, 'every device is on the world map')
    await t.resolves(page.getByText(`${map.length} of ${map.length} devices`).waitFor(), 'the panel counts them')
    const marks = await page.locator('.leaflet-overlay-pane path.leaflet-interactive, .leaflet-overlay-pane canvas, .cluster').count()
    t.ok(marks > 0, 'devices are drawn on the map')
    t.ok(await page.locator('.leaflet-overlay-pane canvas, .leaflet-overlay-pane svg').count() > 0, 'the countries are drawn without a tile server')
    await shoot(page, 'map')

    // With the keyboard: the skip link, then the search box, each labelled.
    await page.keyboard.press('Tab')
    t.equal(await page.evaluate(() => (globalThis as unknown as InPage).document.activeElement?.textContent), 'Skip to content', 'the first Tab reaches the skip link')
    await page.getByLabel('Search devices').focus()
    await page.keyboard.type('barcelona')
    await page.getByRole('list', { name: 'Matching devices' }).getByRole('link', { name: new RegExp(showcase.name) }).waitFor()
    t.equal(await page.getByText(/^1 of \d+ devices/).count(), 1, 'the search by city narrows the map to one device')
    await page.getByLabel('Search devices').fill('')
    await page.getByLabel('Online only').check()
    const online = map.filter((d) => (d as { system_tags: string[] }).system_tags.includes('online')).length
    await t.resolves(page.getByText(`${online} of ${map.length} devices`).waitFor(), 'the online filter keeps the online devices')
    await page.getByLabel('Online only').uncheck()
    await page.getByLabel('Search devices').fill(showcase.name.split(' ')[0] ?? '')
    // The device page opens on the last week, automatically rolled up: the kit reports hourly, so
    // its buckets are hours (15 minutes left three empty buckets between any two values, and the
    // charts drew no line), and every chart with data draws a line.
    const asked: string[] = []
    page.on('response', (r) => { if (r.url().includes('sensor_ids=all&')) asked.push(r.url()) })
    await page.getByRole('list', { name: 'Matching devices' }).getByRole('link', { name: new RegExp(showcase.name) }).click()
    await page.waitForURL(`**/explorer/devices/${showcase.id}**`)
    const kit = await (await fetch(`${base}/v0/devices/${showcase.id}`)).json() as { data: { sensors: Array<{ id: number }> } }
    for (const sensor of kit.data.sensors) {
      await page.locator(`.chart-card[data-sensor-id="${sensor.id}"] .chart .u-over`).waitFor()
      const [, values] = await plotted(page, sensor.id)
      const lines = values.filter((v, i) => v !== null && values[i + 1] != null).length
      t.ok(lines > 24, `the chart of sensor ${sensor.id} draws lines (${lines} segments)`)
    }
    t.match(asked.at(-1), /rollup=1h&/, 'the charts drawn are hourly: not finer than the kit reports')
    t.equal(await page.getByLabel('Rollup').inputValue(), 'auto')
    t.match(await page.getByLabel('Rollup').locator('option[value="auto"]').innerText(), /1 hour/, 'and says which rollup it chose')
  })

  await t.test('the device page: latest values, charts that draw what the API answers, rollup and range', async (t) => {
    const device = await (await fetch(`${base}/v0/devices/${showcase.id}`)).json() as { name: string, data: { sensors: { id: number, value: number | null, unit: string }[] } }
    await page.getByRole('heading', { name: device.name }).waitFor()
    t.equal(await page.getByRole('link', { name: 'Manage this device' }).count(), 0, 'a visitor has nothing to manage')
    for (const sensor of device.data.sensors) {
      const shown = await page.locator(`.latest-item[data-sensor-id="${sensor.id}"] .latest-value`).innerText()
      const value = sensor.value ?? NaN
      const digits = Math.abs(value) >= 1000 ? 0 : Math.abs(value) >= 10 ? 1 : 2
      t.equal(shown, `${value.toLocaleString('en-US', { maximumFractionDigits: digits })} ${sensor.unit}`, `the latest value of sensor ${sensor.id}`)
    }
    const time = page.locator('.device-head time').first()
    t.match(await time.getAttribute('title'), / UTC$/, 'a time shows UTC on hover')

    // A year: the automatic rollup is a day; the chart draws exactly the API's buckets, gaps as nulls.
    const yearAnswer = page.waitForResponse((r) => r.url().includes('sensor_ids=all&') && r.url().includes('rollup=1d'))
    await page.getByLabel('Last year').check()
    const chart = page.locator('.chart-card[data-sensor-id="55"]')
    await chart.scrollIntoViewIfNeeded()
    const yearResponse = await yearAnswer
    const everyYear = await yearResponse.json() as Histories
    t.equal(everyYear.sensors.length, device.data.sensors.length, 'one request answers every sensor\'s chart')
    const year = ofSensor(everyYear, 55)
    await chart.locator('.chart .u-over').waitFor()
    t.same(await plotted(page, 55), asPlotted(year), 'the year chart draws the API\'s daily buckets')
    t.match(yearResponse.url(), /timezone=Europe%2FMadrid/, 'asked in the browser\'s time zone')
    t.ok(year.readings.every(([at]) => /T2[23]:00:00Z$/.test(at)), 'so its days start at Madrid\'s midnight')
    const again = ofSensor(await (await fetch(yearResponse.url())).json() as Histories, 55)
    t.same(again.readings, year.readings, 'and they are what the API answers anyone asking the same')
    const alone = await (await fetch(yearResponse.url().replace('sensor_ids=all', 'sensor_id=55'))).json() as Readings
    t.same(year.readings, alone.readings, 'and what the one-sensor request answers')
    const gapFrom = Date.parse(showcase.gap.from) / 1000 + 86_400
    const gapTo = Date.parse(showcase.gap.to) / 1000 - 86_400
    const [times, values] = await plotted(page, 55)
    const inGap = times.map((x, i) => [x, values[i]] as const).filter(([x]) => x >= gapFrom && x < gapTo)
    t.ok(inGap.length >= 5 && inGap.every(([, v]) => v === null), 'the week without readings is a gap, not a line')
    await shoot(page, 'device-year', true)

    const weekly = page.waitForResponse((r) => r.url().includes('sensor_ids=all&') && r.url().includes('rollup=1w'))
    await page.getByLabel('Rollup').selectOption('1w')
    const week = ofSensor(await (await weekly).json() as Histories, 55)
    await t.resolves(page.waitForFunction((n) => {
      const el = (globalThis as unknown as InPage).document.querySelector('.chart-card[data-sensor-id="55"] .chart')
      return el?.uplot?.data[0]?.length === n
    }, week.readings.length), 'changing the rollup redraws the chart')
    t.same(await plotted(page, 55), asPlotted(week), 'with the API\'s weekly buckets')
    t.ok(week.readings.length < year.readings.length / 5, 'fewer, wider buckets')
    t.match(page.url(), /rollup=1w/, 'the choice is in the address, to share or come back to')

    const maxima = page.waitForResponse((r) => r.url().includes('sensor_ids=all&') && r.url().includes('function=max'))
    await page.getByLabel('Function').selectOption('max')
    const max = ofSensor(await (await maxima).json() as Histories, 55)
    await t.resolves(page.waitForFunction((last) => {
      const el = (globalThis as unknown as InPage).document.querySelector('.chart-card[data-sensor-id="55"] .chart')
      const values = el?.uplot?.data[1] ?? []
      return values[values.length - 1] === last
    }, max.readings[0]?.[1] ?? null), 'the function control redraws with maxima')
    t.same(await plotted(page, 55), asPlotted(max))
  })

  await t.test('a reading posted while the page is open appears without a reload', async (t) => {
    // The weekly rollup chosen for the year makes one bucket of a day: the range resets it.
    t.equal(await page.getByLabel('Rollup').inputValue(), '1w')
    await page.getByLabel('Last day').check()
    t.equal(await page.getByLabel('Rollup').inputValue(), 'auto', "a year's weeks give way to the automatic rollup for a day")
    await page.locator('.badge-live').waitFor()
    // Posted a second after the range was picked, so that it lies past that range's end: the live
    // chart and the download below must both still take it.
    await page.waitForTimeout(1100)
    const at = new Date(Math.floor(Date.now() / 1000) * 1000)
    const posted = await fetch(`${base}/v0/devices/${showcase.id}/readings`, {
      method: 'POST', headers: admin, body: JSON.stringify({ data: [{ recorded_at: at.toISOString(), sensors: [{ id: 55, value: 31.4 }] }] })
    })
    t.equal(posted.status, 200, 'posted')
    await t.resolves(page.locator('.latest-item[data-sensor-id="55"] .latest-value', { hasText: '31.4 ºC' }).waitFor({ timeout: 10_000 }), 'the latest value changes')
    await t.resolves(page.waitForFunction((x) => {
      const el = (globalThis as unknown as InPage).document.querySelector('.chart-card[data-sensor-id="55"] .chart')
      const times = el?.uplot?.data[0] ?? []
      return times[times.length - 1] === x
    }, at.getTime() / 1000, { timeout: 10_000 }), 'and the chart gains the point')
  })

  await t.test('the download button streams the CSV of the range shown', async (t) => {
    await page.getByLabel('Function').selectOption('avg')
    const link = page.getByRole('link', { name: 'Download CSV' })
    const href = await link.getAttribute('href') ?? ''
    const query = new URL(href, base).searchParams
    t.equal(query.get('format'), 'csv')
    t.equal(new URL(page.url()).searchParams.get('range'), 'day')
    t.ok(Date.parse(query.get('to') ?? '') - Date.parse(query.get('from') ?? '') === 86_400_000, 'the range shown, a day')
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()])
    const file = await download.path()
    const csv = readFileSync(file, 'utf8').trim().split('\n')
    // The kit reports hourly: a day holds 23 or 24 of its hours, as the day's edges fall.
    const times = csv.slice(1).map((line) => Date.parse(line.split(',')[0] ?? ''))
    t.ok(csv.length - 1 >= 23 * 12, `a day of the kit's values (${csv.length - 1} values)`)
    // The range ends at the click (the link's address is brought up to date then), so the download's own address tells it.
    const asked = new URL(download.url()).searchParams
    t.ok(Date.parse(asked.get('to') ?? '') - Date.parse(asked.get('from') ?? '') === 86_400_000, 'downloaded: a day')
    t.ok(times.every((ms) => ms >= Date.parse(asked.get('from') ?? '') && ms <= Date.parse(asked.get('to') ?? '')), 'every value within the day downloaded')
    t.match(csv.join('\n'), /31\.4/, 'with the reading posted during the test')
  })

  await t.test('errors are readable: a 429 says when to try again', async (t) => {
    const other = await visitor.newPage()
    await other.route('**/v0/devices/*', async (route) => {
      await route.fulfill({ status: 429, headers: { 'retry-after': '7', 'content-type': 'application/json' }, body: JSON.stringify({ id: 'too_many_requests', message: 'Too many requests', errors: null, url: null }) })
    })
    await other.goto(`${base}/explorer/devices/${showcase.id}`)
    await t.resolves(other.getByRole('alert').filter({ hasText: 'Try again in 7 seconds' }).waitFor(), 'the retry time is shown')
    await other.close()
  })

  await t.test('signed in: sign up, add a device, see its token, make it private; a visitor cannot see it', async (t) => {
    const member = await newContext()
    const mine = await member.newPage()
    mine.on('pageerror', (err) => { problems.push(err.message) })
    await mine.goto(`${base}/explorer/`)
    await mine.getByRole('link', { name: 'Sign up' }).click()
    const username = `walker${process.pid}`
    await mine.getByLabel('Username').fill(username)
    await mine.getByLabel('E-mail').fill(`${username}@example.org`)
    await mine.getByLabel('Password').fill('a long password')
    await mine.getByRole('button', { name: 'Create account' }).click()
    await mine.getByRole('heading', { name: 'My devices' }).waitFor()
    const token = await mine.evaluate(() => JSON.parse((globalThis as unknown as InPage).localStorage.getItem('esp.session') ?? '{}').token as string)
    t.type(token, 'string', 'the access token is kept by this origin')

    await mine.getByRole('button', { name: 'Add a device' }).click()
    const form = mine.getByRole('form', { name: 'New device' })
    await form.getByLabel('Name').fill('Kitchen window')
    await form.getByLabel('Placed').selectOption('indoor')
    await form.getByLabel('Latitude').fill('41.40')
    await form.getByLabel('Longitude').fill('2.19')
    await form.getByRole('button', { name: 'Create device' }).click()
    // The new device's form opens at once (found by place: its label follows the name being edited).
    const manage = mine.locator('.device-list li form')
    await manage.waitFor()
    const me = await (await fetch(`${base}/v0/me`, { headers: { authorization: `Bearer ${token}` } })).json() as { devices: { id: number, name: string }[] }
    const kitchen = me.devices.find((d) => d.name === 'Kitchen window')
    t.ok(kitchen, 'the device is created for the signed-in user')
    const apiDevice = await (await fetch(`${base}/v0/devices/${kitchen?.id}`, { headers: { authorization: `Bearer ${token}` } })).json() as { device_token: string }
    await manage.getByRole('button', { name: 'Show the token' }).click()
    t.equal(await manage.getByLabel('Device token').innerText(), apiDevice.device_token, 'the device token to configure a kit')

    // Public first: the visitor finds it.
    const visitorMap = await (await fetch(`${base}/v0/devices/world_map`)).json() as { id: number }[]
    t.ok(visitorMap.some((d) => d.id === kitchen?.id), 'a new public device is on the map')
    await manage.getByLabel('Name').fill('Kitchen sill')
    await manage.getByLabel(/^Private/).check()
    await manage.getByRole('button', { name: 'Save changes' }).click()
    await manage.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const after = await (await fetch(`${base}/v0/devices/${kitchen?.id}`, { headers: { authorization: `Bearer ${token}` } })).json() as { name: string, data_policy: { is_private: boolean } }
    t.equal(after.name, 'Kitchen sill', 'renamed')
    t.equal(after.data_policy.is_private, true, 'private')
    await shoot(mine, 'my-devices', true)

    // The owner still sees it: on their map and its page.
    await mine.goto(`${base}/explorer/devices/${kitchen?.id}`)
    await mine.getByRole('heading', { name: 'Kitchen sill' }).waitFor()
    t.equal(await mine.locator('.badge-private').count(), 1, 'the owner sees their private device, marked private')
    t.equal(await mine.getByRole('link', { name: 'Manage this device' }).count(), 1, 'with a way to manage it')

    // A signed-out visitor: not on the map, not in a search, and its page says so.
    const stranger = await newContext()
    const theirs = await stranger.newPage()
    await theirs.goto(`${base}/explorer/`)
    await theirs.waitForSelector('body[data-map-ready="true"]')
    await theirs.getByLabel('Search devices').fill('Kitchen')
    await t.resolves(theirs.getByText('No device matches.').waitFor(), 'a visitor\'s search does not find the private device')
    await theirs.goto(`${base}/explorer/devices/${kitchen?.id}`)
    await t.resolves(theirs.getByRole('alert').filter({ hasText: 'no such device, or it is private' }).waitFor(), 'and its page is not shown')
    t.equal(await theirs.getByText('Kitchen sill').count(), 0, 'nothing of it leaks')

    // The profile, then signing out forgets the token.
    await mine.getByRole('link', { name: username }).click()
    await mine.getByLabel('City').fill('Barcelona')
    await mine.getByRole('button', { name: 'Save' }).click()
    await mine.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
    const profile = await (await fetch(`${base}/v0/me`, { headers: { authorization: `Bearer ${token}` } })).json() as { location: { city: string } }
    t.equal(profile.location.city, 'Barcelona', 'the profile is saved')
    await mine.getByRole('button', { name: 'Sign out' }).click()
    t.equal(await mine.evaluate(() => (globalThis as unknown as InPage).localStorage.getItem('esp.session')), null, 'signing out forgets the token')

    // Signing in again, from a page that needs it: back there afterwards.
    await mine.goto(`${base}/explorer/my/devices`)
    await mine.getByRole('heading', { name: 'Sign in' }).waitFor()
    await mine.getByLabel('Username or e-mail').fill(username)
    await mine.getByLabel('Password').fill('not the password')
    await mine.getByRole('button', { name: 'Sign in' }).click()
    await t.resolves(mine.getByRole('alert').waitFor(), 'a wrong password is said so')
    await mine.getByLabel('Password').fill('a long password')
    await mine.getByRole('button', { name: 'Sign in' }).click()
    await mine.getByRole('heading', { name: 'My devices' }).waitFor()

    // Archiving asks first, then the device is gone from the list and from the API.
    mine.once('dialog', (dialog) => { void dialog.accept() })
    await mine.locator(`li[data-device-id="${kitchen?.id}"]`).getByRole('button', { name: 'Manage' }).click()
    await mine.getByRole('button', { name: 'Archive device' }).click()
    await t.resolves(mine.locator(`li[data-device-id="${kitchen?.id}"]`).waitFor({ state: 'detached' }), 'archived: no longer in my devices')
    const archived = await fetch(`${base}/v0/devices/${kitchen?.id}`, { headers: { authorization: `Bearer ${token}` } })
    t.equal(archived.status, 404, 'and the API no longer serves it')
    await member.close()
    await stranger.close()
  })

  await t.test('on a phone: nothing wider than the screen, every control labelled', async (t) => {
    const phone = await newContext({ width: 390, height: 844 })
    const small = await phone.newPage()
    for (const [name, url] of [['phone-map', '/explorer/'], ['phone-device', `/explorer/devices/${showcase.id}?range=month`]] as const) {
      await small.goto(`${base}${url}`)
      await small.waitForLoadState('networkidle')
      const overflow = await small.evaluate(() => { const page = globalThis as unknown as InPage; return page.document.documentElement.scrollWidth - page.innerWidth })
      t.ok(overflow <= 0, `${name}: no sideways scrolling (${overflow} px)`)
      const unlabelled = await small.evaluate(() => [...(globalThis as unknown as InPage).document.querySelectorAll('input, select, textarea, button')]
        .filter((el) => el.offsetParent !== null)
        .filter((el) => (el.labels?.length ?? 0) === 0 && (el.getAttribute('aria-label') ?? '') === '' && !(el.tagName === 'BUTTON' && (el.textContent ?? '').trim() !== ''))
        .map((el) => el.outerHTML.slice(0, 80)))
      t.same(unlabelled, [], `${name}: every control has a label`)
      await shoot(small, name, true)
    }
    await phone.close()
  })

  t.same(problems, [], 'no script errors in the pages')
  t.same(requests.filter((r) => !r.startsWith(base) && !r.startsWith('ws')), [], 'the pages load nothing from elsewhere (no tile server)')
})
