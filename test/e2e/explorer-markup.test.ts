import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { CHROMIUM, EXPLORER_ADMIN, startExplorerPlatform } from '@esp/test-helpers/explorer'

// Debian's chromium (.ci/run installs it); a browser is never downloaded.
const ADMIN = EXPLORER_ADMIN

/**
 * Markup in every field a person can write (issue 34): if any page drew one as HTML, an element
 * marked data-planted would appear (and the image would be fetched). Usernames allow no spaces or
 * slashes, so theirs is an element of a name of its own.
 */
const planted = (field: string): string => `<img data-planted="${field}" src="/planted.png"><b data-planted="${field}">${field}</b>`
const MARKED = '[data-planted], esp-planted'

/**
 * Installed before any script of each page: every element made from planted markup, at any
 * moment (a tooltip drawn and removed again counts too), in window.espPlanted.
 */
const WATCH = `
  window.espPlanted = []
  new MutationObserver((changes) => {
    for (const change of changes) for (const node of change.addedNodes) {
      if (node.nodeType !== 1) continue
      const found = node.matches(${JSON.stringify(MARKED)}) ? [node] : [...node.querySelectorAll(${JSON.stringify(MARKED)})]
      for (const el of found) window.espPlanted.push(el.outerHTML.slice(0, 120))
    }
  }).observe(document, { childList: true, subtree: true })
`

/** What page.evaluate callbacks read of the page (this file compiles without the DOM library). */
interface InPage {
  espPlanted: string[]
  document: { querySelectorAll: (selector: string) => { length: number }, title: string }
}

interface Json { status: number, body: Record<string, unknown> }

t.test('the explorer draws every user-provided string as text, on every page', async (t) => {
  const started = await startExplorerPlatform(t)
  if (started === null) return
  const { base } = started
  const call = async (method: string, route: string, token: string | null, body?: unknown): Promise<Json> => {
    const res = await fetch(`${base}/v0${route}`, {
      method,
      headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? {} : JSON.parse(text) as Record<string, unknown> }
  }
  const signIn = async (username: string, password: string): Promise<string> => String((await call('POST', '/sessions', null, { username, password })).body.access_token)

  // Through the real API, as people would: the catalogue by its admin, the rest by a citizen.
  const admin = await signIn(ADMIN.username, ADMIN.password)
  const measurement = await call('POST', '/measurements', admin, { name: planted('measurement'), description: planted('measurement description') })
  t.equal(measurement.status, 201, 'a measurement named with markup')
  const sensor = await call('POST', '/sensors', admin, { name: planted('sensor'), description: planted('sensor description'), unit: planted('unit'), measurement_id: measurement.body.id })
  t.equal(sensor.status, 201, 'a sensor named with markup')
  const sensorId = Number(sensor.body.id)
  t.equal((await call('POST', '/tags', admin, { name: planted('tag'), description: planted('tag description') })).status, 201, 'a tag named with markup')

  const username = `<esp-planted>${process.pid}`
  const password = 'a long password'
  t.equal((await call('POST', '/users', null, { username, email: `planted${process.pid}@example.org`, password })).status, 201, 'a username with markup')
  const token = await signIn(username, password)
  const profile = await call('PATCH', '/me', token, { city: planted('city'), url: 'https://example.org/"><b data-planted="url">url</b>' })
  t.equal(profile.status, 200, 'a profile with markup')

  const names = { open: planted('public device name'), hidden: planted('private device name') }
  const device = async (name: string, isPrivate: boolean, latitude: number, longitude: number): Promise<number> => {
    const fields = { name, description: planted(`${isPrivate ? 'private' : 'public'} description`), exposure: 'outdoor', latitude, longitude }
    const made = await call('POST', '/devices', token, { ...fields, is_private: isPrivate, user_tags: planted('tag'), hardware_name_override: planted('hardware') })
    t.equal(made.status, 201, `a ${isPrivate ? 'private' : 'public'} device with markup: ${JSON.stringify(made.body).slice(0, 200)}`)
    const id = Number(made.body.id)
    // A few hours of readings of the planted sensor and a catalogue one, so that there are charts.
    const hour = 3_600_000
    const now = Math.floor(Date.now() / hour) * hour
    const data = Array.from({ length: 6 }, (_, i) => ({ recorded_at: new Date(now - (6 - i) * hour).toISOString(), sensors: [{ id: sensorId, value: 10 + i }, { id: 55, value: 20.5 + i }] }))
    t.equal((await call('POST', `/devices/${id}/readings`, token, { data })).status, 200, 'with readings')
    return id
  }
  const open = await device(names.open, false, 12.5, -31.5)
  const hidden = await device(names.hidden, true, -22.5, 62.5)

  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
  })
  t.teardown(async () => { await browser.close() })

  const shots = process.env.ESP_EXPLORER_SCREENSHOTS ?? mkdtempSync(path.join(tmpdir(), 'esp-explorer-markup-'))
  mkdirSync(shots, { recursive: true })
  if (process.env.ESP_EXPLORER_SCREENSHOTS === undefined) t.teardown(() => { rmSync(shots, { recursive: true, force: true }) })
  const shoot = async (t: Test, page: Page, name: string): Promise<void> => {
    const file = path.join(shots, `${name}.png`)
    await page.screenshot({ path: file, fullPage: true })
    t.ok(existsSync(file), `screenshot ${name}`)
  }

  const requests: string[] = []
  const problems: string[] = []
  const newContext = async (): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'UTC', acceptDownloads: true })
    await context.addInitScript(WATCH)
    context.on('request', (request) => { requests.push(request.url()) })
    context.on('page', (page) => { page.on('pageerror', (err) => { problems.push(err.message) }) })
    return context
  }
  /** No element made from planted markup, now or at any moment since the page loaded. */
  const clean = async (t: Test, page: Page, where: string): Promise<void> => {
    const now = await page.evaluate((selector) => (globalThis as unknown as InPage).document.querySelectorAll(selector).length, MARKED)
    const ever = await page.evaluate(() => (globalThis as unknown as InPage).espPlanted)
    t.equal(now, 0, `${where}: no element made from planted markup`)
    t.same(ever, [], `${where}: none made at any moment`)
  }
  const textShown = async (t: Test, page: Page, text: string, where: string): Promise<void> => {
    await t.resolves(page.getByText(text, { exact: true }).first().waitFor(), `${where}: shown as text`)
  }
  /** Centres the map on a device from the list, points at it, and reads its tooltip. */
  const tooltipOf = async (page: Page, name: string): Promise<string> => {
    const show = page.getByRole('button', { name: `Show ${name} on the map`, exact: true })
    const box = await page.locator('.map').boundingBox()
    if (box === null) return ''
    const tooltip = page.locator('.leaflet-tooltip')
    // The markers are drawn on a canvas once the map has settled, later on a loaded machine, where
    // a late load of the devices may also move the map again: the device is centred anew each
    // round and the pointer goes out and back to the centre until a tooltip opens, for 30 s at most.
    const until = Date.now() + 30_000
    for (let round = 0; await tooltip.count() === 0 && Date.now() < until; round++) {
      if (round % 4 === 0) await show.click()
      await page.waitForTimeout(250)
      await page.mouse.move(box.x + 5, box.y + 5)
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2, { steps: 4 })
    }
    return await tooltip.innerText()
  }

  await t.test('a visitor: the map, its tooltips and the device page', async (t) => {
    const visitor = await newContext()
    const page = await visitor.newPage()
    // The countries' outline arrives after the devices, as on a slow link or a loaded machine: it
    // must never lie over the devices and take their pointer events (their tooltips, their clicks).
    let atlasHeld = false
    await page.route('**/countries-110m*.json', async (route) => {
      await page.waitForSelector('body[data-map-ready="true"]')
      await page.waitForTimeout(500)
      atlasHeld = true
      await route.continue()
    })
    const atlasLoaded = page.waitForEvent('requestfinished', { predicate: (request) => request.url().includes('countries-110m'), timeout: 60_000 })
    await page.goto(`${base}/explorer/`)
    await page.waitForSelector('body[data-map-ready="true"]')
    await textShown(t, page, names.open, 'the map\'s recently active list')
    t.equal(await page.getByText(names.hidden, { exact: true }).count(), 0, 'a visitor sees nothing of the private device')
    await page.getByLabel('Search devices').fill('public device name')
    await atlasLoaded
    t.ok(atlasHeld, 'the outline came after the devices')
    t.equal(await tooltipOf(page, names.open), names.open, 'the marker\'s tooltip holds the name as text')
    await clean(t, page, 'the map with a tooltip open')
    await shoot(t, page, 'markup-map-tooltip')

    await page.getByRole('list', { name: 'Matching devices' }).getByRole('link').first().click()
    await page.waitForURL(`**/explorer/devices/${open}**`)
    await page.getByRole('heading', { name: names.open, exact: true }).waitFor()
    await textShown(t, page, planted('public description'), 'the device page')
    await textShown(t, page, username, 'the device page\'s owner')
    await textShown(t, page, planted('measurement'), 'the device page\'s latest values')
    await page.locator(`.chart-card[data-sensor-id="${sensorId}"] .chart .u-over`).waitFor()
    t.equal(await page.evaluate(() => (globalThis as unknown as InPage).document.title), `${names.open} · Sensor network explorer`, 'the window title, as text')
    await clean(t, page, 'the device page')
    await shoot(t, page, 'markup-device')
    await visitor.close()
  })

  await t.test('the owner: map, own devices, profile, private device page and its download', async (t) => {
    const owner = await newContext()
    const page = await owner.newPage()
    await page.goto(`${base}/explorer/sign-in`)
    await page.getByLabel('Username or e-mail').fill(username)
    await page.getByLabel('Password').fill(password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('heading', { name: 'My devices' }).waitFor()
    await textShown(t, page, names.hidden, 'my devices')
    await textShown(t, page, names.open, 'my devices')
    await textShown(t, page, username, 'the header\'s username')
    for (const id of [open, hidden]) {
      await page.locator(`li[data-device-id="${id}"]`).getByRole('button', { name: 'Manage' }).click()
      await page.locator(`li[data-device-id="${id}"] form`).waitFor()
    }
    t.equal(await page.locator(`li[data-device-id="${hidden}"] form`).getByLabel('Name').inputValue(), names.hidden, 'the edit form holds the name as its value')
    await clean(t, page, 'my devices, both forms open')
    await shoot(t, page, 'markup-my-devices')

    await page.getByRole('link', { name: username, exact: true }).click()
    await page.getByRole('heading', { name: 'My profile' }).waitFor()
    t.equal(await page.getByLabel('City').inputValue(), planted('city'), 'the profile\'s city as a value')
    await clean(t, page, 'my profile')

    await page.goto(`${base}/explorer/`)
    await page.waitForSelector('body[data-map-ready="true"]')
    await page.getByLabel('Search devices').fill('private device name')
    t.equal(await tooltipOf(page, names.hidden), names.hidden, 'the private device\'s tooltip on the owner\'s map, as text')
    await clean(t, page, 'the owner\'s map with a tooltip open')

    await page.goto(`${base}/explorer/devices/${hidden}`)
    await page.getByRole('heading', { name: names.hidden, exact: true }).waitFor()
    await textShown(t, page, planted('private description'), 'the private device page')
    await page.locator(`.chart-card[data-sensor-id="${sensorId}"] .chart .u-over`).waitFor()
    await clean(t, page, 'the private device page')
    await shoot(t, page, 'markup-private-device')

    // The download of private data: a short-lived link of its own, never the session token.
    const link = page.getByRole('link', { name: 'Download CSV' })
    t.notOk((await link.getAttribute('href') ?? '').includes(token), 'the download link holds no session token')
    t.notMatch(await link.getAttribute('href') ?? '', /access_token|bearer_token/)
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()])
    const asked = new URL(download.url())
    t.notOk(download.url().includes(token), 'nor does the address downloaded')
    t.equal(asked.pathname, `/v0/devices/${hidden}/readings/export`)
    t.equal(asked.searchParams.get('format'), 'csv')
    const key = asked.searchParams.get('download_key') ?? ''
    t.match(key, /^\d+\.\d+\.[\w-]+$/, 'it carries a download key')
    const csv = readFileSync(await download.path(), 'utf8')
    t.match(csv, /^recorded_at,sensor_id,value\n/, 'the CSV')
    t.equal(csv.split('\n').filter((line) => line.includes(`,${sensorId},`)).length, 6, 'with the private device\'s readings')
    t.notOk((await link.getAttribute('href') ?? '').includes(token), 'after the click too')
    t.equal((await fetch(`${base}/v0/me`, { headers: { authorization: `Bearer ${key}` } })).status, 401, 'the key is no credential for anything else')
    t.equal((await fetch(`${base}/v0/devices/${open}/readings/export?download_key=${key}`)).status, 403, 'nor for another device')
    await owner.close()
  })

  await t.test('the pages without user data, for completeness', async (t) => {
    const visitor = await newContext()
    const page = await visitor.newPage()
    for (const [name, route] of [['sign in', '/sign-in?next=%3Cb%20data-planted%3D1%3E'], ['sign up', '/sign-up'], ['missing device', '/devices/987654321'], ['no page', '/no/such/page']] as const) {
      await page.goto(`${base}/explorer${route}`)
      await page.locator('main').first().waitFor()
      await page.waitForLoadState('networkidle')
      await clean(t, page, name)
    }
    await visitor.close()
  })

  t.same(problems, [], 'no script errors in the pages')
  t.same(requests.filter((r) => r.includes('/planted.png')), [], 'no planted image was ever fetched')
  t.same(requests.filter((r) => r.includes(token)), [], 'no address the browser asked for holds the session token')
})
