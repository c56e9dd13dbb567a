import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import t from 'tap'
import { explorerDist } from '@esp/explorer'
import { buildApi } from '@esp/test-helpers/api'

// `pnpm test` builds the explorer before any file runs (scripts/run-tests.ts).
const explorer = { dir: explorerDist, tileUrl: 'https://{s}.tile.example.org/{z}/{x}/{y}.png', tileAttribution: '© "Example" <tiles>' }
const assets = readdirSync(path.join(explorerDist, 'assets'))
const script = assets.find((f) => /^index-[\w-]+\.js$/.test(f)) ?? ''

t.test('browsers asking for / or /v0/ are sent to the explorer; everyone else gets the links', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer } })
  const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'
  for (const url of ['/', '/v0/', '/v0']) {
    const sent = await app.inject({ url, headers: { accept: browser } })
    t.equal(sent.statusCode, 302, `${url} for a browser`)
    t.equal(sent.headers.location, '/explorer/')
    t.match(sent.headers.vary, /Accept/)
  }
  for (const accept of [undefined, '*/*', 'application/json', 'application/json, text/html', 'application/vnd.smartcitizen; version=0']) {
    const links = await app.inject({ url: '/', headers: accept === undefined ? {} : { accept } })
    t.equal(links.statusCode, 200, `Accept: ${accept ?? '(none)'} gets JSON`)
    t.type(links.json().devices_url, 'string')
  }
  // Without an explorer to serve, nobody is redirected.
  const { app: bare } = await buildApi(t)
  t.equal((await bare.inject({ url: '/', headers: { accept: browser } })).statusCode, 200)
})

t.test('the page: every app path is index.html with the settings written in and a strict policy', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer } })
  for (const url of ['/explorer', '/explorer/', '/explorer/devices/12', '/explorer/my/devices?x=1']) {
    const page = await app.inject({ url })
    t.equal(page.statusCode, 200, url)
    t.match(page.headers['content-type'], /^text\/html/)
    t.equal(page.headers['cache-control'], 'no-cache', 'the page is revalidated: it names the current assets')
    t.match(page.body, `/explorer/assets/${script}`)
  }
  const page = await app.inject({ url: '/explorer/' })
  const policy = String(page.headers['content-security-policy'])
  t.match(policy, "script-src 'self'", 'scripts only from here')
  t.match(policy, "frame-ancestors 'none'")
  t.match(policy, 'img-src \'self\' data: blob: https://*.tile.example.org', 'and the configured tile server\'s images')
  const meta = /<meta name="esp-config" content="([^"]*)">/.exec(page.body)?.[1] ?? ''
  const settings = JSON.parse(meta.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')) as Record<string, unknown>
  t.same(settings, { tileUrl: explorer.tileUrl, tileAttribution: explorer.tileAttribution, mqttPath: '/mqtt' }, 'the settings, escaped into the attribute')
  t.notMatch(meta, /[<>"]/, 'nothing in them can end the attribute')
})

t.test('assets: cached for good, sent compressed, and nothing outside assets/', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer } })
  const original = readFileSync(path.join(explorerDist, 'assets', script))
  const br = await app.inject({ url: `/explorer/assets/${script}`, headers: { 'accept-encoding': 'br, gzip' } })
  t.equal(br.statusCode, 200)
  t.equal(br.headers['cache-control'], 'public, max-age=31536000, immutable', 'named by content hash, so immutable')
  t.equal(br.headers['content-encoding'], 'br')
  t.ok(brotliDecompressSync(br.rawPayload).equals(original), 'brotli of the built file')
  const gz = await app.inject({ url: `/explorer/assets/${script}`, headers: { 'accept-encoding': 'gzip' } })
  t.equal(gz.headers['content-encoding'], 'gzip')
  t.ok(gunzipSync(gz.rawPayload).equals(original), 'gzip of the built file')
  const plain = await app.inject({ url: `/explorer/assets/${script}` })
  t.ok(plain.rawPayload.equals(original), 'and the file itself to a client that takes neither')
  const json = assets.find((f) => f.endsWith('.json')) ?? ''
  t.equal((await app.inject({ url: `/explorer/assets/${json}` })).statusCode, 200, 'a .json asset keeps its name (no version rewriting)')

  for (const url of ['/explorer/assets/nope.js', '/explorer/assets/..%2F..%2Fpackage.json', '/explorer/assets/.build-stamp', '/explorer/favicon.ico']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404, `${url} is not found`)
    t.match(res.json(), { id: 'not_found' }, 'in the one error shape')
  }
})

t.test('loading the explorer does not use up the API rate limit', async (t) => {
  const { app } = await buildApi(t, { deps: { explorer }, server: { rateLimit: { perMinute: 3 } } })
  for (let i = 0; i < 10; i++) {
    t.equal((await app.inject({ url: '/explorer/' })).statusCode, 200)
    t.equal((await app.inject({ url: `/explorer/assets/${script}` })).statusCode, 200)
  }
  const calls = []
  for (let i = 0; i < 4; i++) calls.push((await app.inject({ url: '/v0/sensors' })).statusCode)
  t.same(calls, [200, 200, 200, 429], 'the API counts its own calls only')
})
