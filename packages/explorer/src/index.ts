/**
 * The explorer's build, as the api and the launchers see it: where the built files are, and a
 * build that runs only when the sources changed since the last one (a fresh clone, a pull).
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

const packageRoot = path.resolve(import.meta.dirname, '..')
/** The built explorer: index.html and assets/ named by content hash. */
export const explorerDist = path.join(packageRoot, 'dist')
const STAMP = '.build-stamp'
const SOURCES = ['app', 'index.html', 'vite.config.ts', 'package.json']

function filesUnder (entry: string): string[] {
  const full = path.join(packageRoot, entry)
  if (!existsSync(full)) return []
  if (!statSync(full).isDirectory()) return [entry]
  return readdirSync(full).sort().flatMap((name) => filesUnder(path.join(entry, name)))
}

/** A digest of everything the build reads of ours; the dependencies are pinned in package.json. */
export function sourceStamp (): string {
  const hash = createHash('sha256')
  for (const file of SOURCES.flatMap(filesUnder)) hash.update(file).update('\0').update(readFileSync(path.join(packageRoot, file))).update('\0')
  return hash.digest('hex')
}

export function explorerIsCurrent (): boolean {
  const stamp = path.join(explorerDist, STAMP)
  return existsSync(stamp) && readFileSync(stamp, 'utf8') === sourceStamp()
}

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)
const COMPRESSIBLE = /\.(js|css|html|json|svg)$/

/**
 * Builds with Vite into a folder of its own, writes gzip and brotli next to every text file (the
 * api sends them as they are), then swaps it in, so a running api never sees half a build.
 */
export async function buildExplorer (): Promise<void> {
  const { build } = await import('vite')
  const stamp = sourceStamp()
  const outDir = path.join(packageRoot, `dist-${randomBytes(4).toString('hex')}`)
  try {
    await build({ configFile: path.join(packageRoot, 'vite.config.ts'), build: { outDir, emptyOutDir: true }, logLevel: 'warn' })
    for (const file of filesUnder(path.relative(packageRoot, outDir)).filter((f) => COMPRESSIBLE.test(f))) {
      const body = readFileSync(path.join(packageRoot, file))
      writeFileSync(path.join(packageRoot, `${file}.gz`), await gzipAsync(body, { level: 9 }))
      writeFileSync(path.join(packageRoot, `${file}.br`), await brotliAsync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }))
    }
    writeFileSync(path.join(outDir, STAMP), stamp)
    const old = `${explorerDist}-old-${randomBytes(4).toString('hex')}`
    if (existsSync(explorerDist)) renameSync(explorerDist, old)
    renameSync(outDir, explorerDist)
    rmSync(old, { recursive: true, force: true })
  } finally {
    rmSync(outDir, { recursive: true, force: true })
  }
}

/** Builds the explorer when its sources changed since the last build; true when it built. */
export async function ensureExplorerBuilt (): Promise<boolean> {
  if (explorerIsCurrent()) return false
  await buildExplorer()
  return true
}
