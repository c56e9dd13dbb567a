import { readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import t from 'tap'
import { collectErrors, ERRORS_DOC, renderErrorsDoc, root } from '../../scripts/errors-doc.js'

/**
 * docs/errors.md is generated from the error catalogue (scripts/errors-doc.ts): it must be what
 * the script renders now, so a new or changed error code cannot be left out of it. No database.
 */
t.test('docs/errors.md is what `pnpm docs:errors` renders from the catalogue', async (t) => {
  const rendered = renderErrorsDoc()
  const written = readFileSync(ERRORS_DOC, 'utf8')
  t.ok(written === rendered, 'docs/errors.md is up to date: run `pnpm docs:errors` and commit docs/errors.md', {
    // the first line that differs, so the failure says where
    firstDifference: written.split('\n').find((line, i) => line !== rendered.split('\n')[i]) ?? '(the rendered page is longer)'
  })
})

t.test('every code of the catalogue is listed with its status, and rendering is stable', async (t) => {
  const entries = collectErrors()
  const codes = new Set(entries.map((e) => e.code))
  // The codes the source spells out as literals: each must be on the page.
  const literal = new Set<string>()
  for (const file of ['packages/domain/src/errors.ts', 'packages/http/src/pressure.ts', 'packages/domain/src/readings/time-params.ts']) {
    const text = readFileSync(path.join(root, file), 'utf8')
    for (const [code = ''] of text.matchAll(/'ESP_[A-Z_]+'/g)) literal.add(code.slice(1, -1))
  }
  t.same([...literal].filter((code) => !codes.has(code)), [], 'no literal code is missing')
  for (const code of ['ESP_CROSS_ORIGIN_COOKIE', 'ESP_RECORD_NOT_FOUND', 'ESP_TOO_MANY_READINGS', 'ESP_OAUTH_INVALID_GRANT', 'ESP_UNDER_PRESSURE']) {
    t.ok(codes.has(code), `${code} is listed`)
  }
  t.match(entries.find((e) => e.code === 'ESP_CROSS_ORIGIN_COOKIE'), { status: '403', id: 'forbidden' })
  t.match(entries.find((e) => e.code === 'ESP_OAUTH_INVALID_CLIENT'), { status: '401', id: 'invalid_client' }, 'a factory of its parameters is listed as it is called')
  t.ok(entries.every((e) => /^(\d{3}|4xx)$/.test(e.status)), 'every entry has an HTTP status')
  const sorted = [...entries].sort((a, b) => a.code < b.code ? -1 : a.code > b.code ? 1 : 0)
  t.same(entries.map((e) => e.code), sorted.map((e) => e.code), 'sorted by code')
  t.equal(renderErrorsDoc(), renderErrorsDoc(), 'two renderings are the same')
  t.equal(ts.version.split('.')[0], '5', 'read with the workspace\'s TypeScript')
})
