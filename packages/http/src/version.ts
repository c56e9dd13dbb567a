import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** `version_git` of the root endpoint: the configured value, else `git describe`, else the package version. */
export function detectVersion (configured: string | undefined): string {
  if (configured !== undefined) return configured
  try {
    return execFileSync('git', ['describe', '--always', '--tags', '--dirty'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 2000 }).trim()
  } catch {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
    return pkg.version
  }
}
