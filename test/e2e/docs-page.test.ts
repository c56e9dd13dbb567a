import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { chromium } from 'playwright-core'
import t from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

// Debian's chromium (.ci/run installs it); a browser is never downloaded.
const CHROMIUM = '/usr/bin/chromium'

t.test('the /docs page: Authorize with a token from POST /sessions, then GET /v0/me from the page', async (t) => {
  if (!existsSync(CHROMIUM)) {
    t.fail(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`)
    return
  }
  const { url } = await createTestDatabase(t)
  const platform = startProcess(t, 'scripts/start.ts', { PORT: '0', MQTT_PORT: '0', DATABASE_URL: url, DATA_DIR: tempDataDir(t) })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''

  const username = `docs${process.pid}`
  const password = 'a long password'
  const signup = await fetch(`${base}/v0/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, email: `${username}@example.org`, password }) })
  t.equal(signup.status, 201)
  const session = await fetch(`${base}/v0/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) })
  const { access_token: token } = await session.json() as { access_token: string }
  t.type(token, 'string')

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run']
  })
  t.teardown(async () => { await browser.close() })
  const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } })
  const requests: string[] = []
  const problems: string[] = []
  page.on('request', (request) => { requests.push(request.url()) })
  page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()) })
  page.on('pageerror', (err) => { problems.push(err.message) })
  const served = await page.goto(`${base}/docs/`)
  const headers = served?.headers() ?? {}
  t.match(headers['content-security-policy'], /(^|; )script-src 'self'(;|$)/, 'a Content-Security-Policy: scripts from this origin only')
  t.match(headers['content-security-policy'], /(^|; )frame-ancestors 'none'(;|$)/, 'and no site may frame the page')
  t.equal(headers['x-frame-options'], 'DENY', 'nor in browsers that only know X-Frame-Options')
  await page.locator('.information-container .title').waitFor()
  t.ok(await page.locator('.opblock').count() > 50, 'the page draws the operations under its policy')

  // Authorize: the bearer scheme of the modal takes the token.
  await page.locator('.auth-wrapper button.authorize').click()
  const bearerScheme = page.locator('.modal-ux .auth-container').filter({ has: page.locator('h4 code', { hasText: /^bearer$/ }) })
  await bearerScheme.locator('#auth-bearer-value').fill(token)
  await bearerScheme.locator('button.authorize').click()
  await bearerScheme.locator('button', { hasText: 'Logout' }).waitFor()
  await bearerScheme.locator('button.btn-done').click()

  // GET /v0/me: Try it out, Execute.
  const me = page.locator('#operations-users-getMe')
  await me.locator('.opblock-summary').first().click()
  await me.getByRole('button', { name: 'Try it out' }).click()
  await me.getByRole('button', { name: 'Execute' }).click()
  // The server's answer, as the page shows it (the table's first row is its header).
  const answer = me.locator('.live-responses-table tr.response')
  await answer.waitFor()
  t.equal((await answer.locator('.response-col_status').innerText()).trim(), '200', 'the page shows a 200')
  t.match(await answer.locator('.response-col_description').innerText(), `"username": "${username}"`, "and the user's username")
  t.match(await me.locator('.curl-command').innerText(), `Authorization: Bearer ${token.slice(0, 20)}`, 'sent with the token of Authorize')

  const dir = mkdtempSync(path.join(tmpdir(), 'esp-docs-page-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  // ESP_DOCS_SCREENSHOT=<file.png> keeps the picture, to look at the page as a person sees it.
  const shot = process.env.ESP_DOCS_SCREENSHOT ?? path.join(dir, 'docs-page.png')
  await me.scrollIntoViewIfNeeded()
  await page.screenshot({ path: shot, fullPage: false })
  t.ok(existsSync(shot), 'a screenshot of the page')

  t.same(requests.filter((r) => !r.startsWith(base)), [], 'the page loads nothing from elsewhere')
  t.same(problems, [], 'no script errors and nothing the policy refused')

  // Framed by a page of another origin (here an opaque one): the browser shows nothing of it.
  const framer = await browser.newPage()
  await framer.setContent(`<iframe src="${base}/docs/" width="800" height="600"></iframe>`)
  await framer.waitForTimeout(1500)
  const framed = framer.frames().find((frame) => frame !== framer.mainFrame())
  t.equal(await framed?.locator('#swagger-ui').count() ?? 0, 0, 'framed, the page is not drawn')
})
