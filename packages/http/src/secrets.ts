import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'

/**
 * JWT_SECRET, or one generated once and kept in DATA_DIR so that tokens survive restarts on the
 * embedded defaults. Several replicas must share JWT_SECRET (docs/configuration.md).
 */
export async function jwtSecret (config: { JWT_SECRET?: string | undefined, DATA_DIR: string }): Promise<string> {
  if (config.JWT_SECRET !== undefined) return config.JWT_SECRET
  const file = path.join(path.resolve(config.DATA_DIR), 'jwt-secret')
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim()
  await mkdir(path.dirname(file), { recursive: true })
  const secret = randomBytes(48).toString('base64url')
  await writeFile(file, secret, { mode: 0o600, flag: 'wx' }).catch(async () => undefined)
  return (await readFile(file, 'utf8')).trim()
}
