/**
 * The explorer's build, as the api and the launchers see it: where the built files are, and a
 * build that runs only when the sources changed since the last one (a fresh clone, a pull).
 */
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
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

/** Every file under a folder, as full paths. */
const filesIn = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => path.join(dir, f)).filter((f) => statSync(f).isFile())

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

/** Assets of earlier builds are kept this long: pages and servers started before a rebuild still load theirs. */
const OLD_ASSETS_KEPT_MS = 24 * 3600 * 1000

/**
 * Builds with Vite into a folder of its own and writes gzip and brotli next to every text file
 * (the api sends them as they are). Then the new assets are moved in beside the old ones, which
 * stay a day: every asset is named by its content, and a running api (which read index.html when
 * it started) or an open page still asks for the old names. index.html and the stamp go last,
 * each replaced in one rename.
 */
export async function buildExplorer (dist = explorerDist): Promise<void> {
  const { build } = await import('vite')
  const stamp = sourceStamp()
  // Beside the target, so that every move into it is a rename on one file system.
  const outDir = path.join(path.dirname(dist), `dist-${randomBytes(4).toString('hex')}`)
  try {
    await build({ configFile: path.join(packageRoot, 'vite.config.ts'), build: { outDir, emptyOutDir: true }, logLevel: 'warn' })
    for (const file of filesIn(outDir).filter((f) => COMPRESSIBLE.test(f))) {
      const body = readFileSync(file)
      writeFileSync(`${file}.gz`, await gzipAsync(body, { level: 9 }))
      writeFileSync(`${file}.br`, await brotliAsync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }))
    }
    const assets = path.join(dist, 'assets')
    mkdirSync(assets, { recursive: true })
    const fresh = new Set(readdirSync(path.join(outDir, 'assets')))
    for (const name of fresh) renameSync(path.join(outDir, 'assets', name), path.join(assets, name))
    for (const name of ['index.html', 'index.html.gz', 'index.html.br']) {
      if (existsSync(path.join(outDir, name))) renameSync(path.join(outDir, name), path.join(dist, name))
    }
    const now = Date.now()
    for (const name of readdirSync(assets)) {
      if (!fresh.has(name) && now - statSync(path.join(assets, name)).mtimeMs > OLD_ASSETS_KEPT_MS) rmSync(path.join(assets, name), { force: true })
    }
    const stampFile = path.join(outDir, STAMP)
    writeFileSync(stampFile, stamp)
    renameSync(stampFile, path.join(dist, STAMP))
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
