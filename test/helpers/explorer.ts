import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Page } from 'playwright-core'
import type { Test } from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { HTTP_LINE, startProcess, tempDataDir } from './process.js'

/** Debian's chromium: the browser tests never download one. */
export const CHROMIUM = '/usr/bin/chromium'
/** The admin `pnpm start` creates for the explorer's tests (the catalogue needs one). */
export const EXPLORER_ADMIN = { username: 'curator', password: 'curator password' }

/**
 * `pnpm start` on a test database of its own, with the admin above, for a browser to visit: its
 * HTTP base and the process. A failure, and null, when chromium is missing.
 */
export async function startExplorerPlatform (t: Test): Promise<{ base: string, platform: ReturnType<typeof startProcess> } | null> {
  if (!existsSync(CHROMIUM)) {
    t.fail(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`)
    return null
  }
  const { url } = await createTestDatabase(t)
  const platform = startProcess(t, 'scripts/start.ts', {
    PORT: '0',
    MQTT_PORT: '0',
    DATABASE_URL: url,
    DATA_DIR: tempDataDir(t),
    ADMIN_USERNAME: EXPLORER_ADMIN.username,
    ADMIN_EMAIL: 'curator@example.org',
    ADMIN_PASSWORD: EXPLORER_ADMIN.password
  })
  return { base: (await platform.waitFor(HTTP_LINE))[1] ?? '', platform }
}

/**
 * Takes a page's screenshots into ESP_EXPLORER_SCREENSHOTS (kept, to look at) or a temporary
 * folder removed after the test; each one is an assertion that it was written.
 */
export function screenshotter (t: Test, prefix: string): (page: Page, name: string, fullPage?: boolean) => Promise<void> {
  const shots = process.env.ESP_EXPLORER_SCREENSHOTS ?? mkdtempSync(path.join(tmpdir(), prefix))
  mkdirSync(shots, { recursive: true })
  if (process.env.ESP_EXPLORER_SCREENSHOTS === undefined) t.teardown(() => { rmSync(shots, { recursive: true, force: true }) })
  return async (page, name, fullPage = false) => {
    const file = path.join(shots, `${name}.png`)
    await page.screenshot({ path: file, fullPage })
    t.ok(existsSync(file), `screenshot ${name}`)
  }
}
