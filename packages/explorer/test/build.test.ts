import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import { buildExplorer } from '../src/index.js'

t.test('a rebuild keeps the assets a running page or server may still ask for, for a day', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-explorer-build-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const dist = path.join(dir, 'dist')
  mkdirSync(path.join(dist, 'assets'), { recursive: true })
  // An asset of the build before (named by its content, as Vite names them), and one of long ago.
  writeFileSync(path.join(dist, 'assets', 'index-previous.js'), 'previous')
  writeFileSync(path.join(dist, 'assets', 'index-ancient.js'), 'ancient')
  const twoDaysAgo = (Date.now() - 2 * 86_400_000) / 1000
  utimesSync(path.join(dist, 'assets', 'index-ancient.js'), twoDaysAgo, twoDaysAgo)

  await buildExplorer(dist)
  const html = readFileSync(path.join(dist, 'index.html'), 'utf8')
  const script = /\/explorer\/assets\/(index-[\w-]+\.js)/.exec(html)?.[1] ?? ''
  t.ok(existsSync(path.join(dist, 'assets', script)), 'the new page\'s script is there')
  t.ok(existsSync(path.join(dist, 'assets', `${script}.br`)) && existsSync(path.join(dist, 'assets', `${script}.gz`)), 'with its brotli and gzip forms')
  t.ok(existsSync(path.join(dist, 'assets', 'index-previous.js')), 'the previous build\'s asset stays')
  t.notOk(existsSync(path.join(dist, 'assets', 'index-ancient.js')), 'an asset older than a day goes')
  t.ok(existsSync(path.join(dist, '.build-stamp')), 'the stamp is written last')
  t.same(readdirSync(dir), ['dist'], 'no build folder is left behind')
})
