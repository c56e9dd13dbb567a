import { existsSync } from 'node:fs'
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
