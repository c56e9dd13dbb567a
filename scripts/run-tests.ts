/**
 * `pnpm test`: every test file of the workspace under tap, against a real PostgreSQL.
 * Without DATABASE_URL an embedded PostgreSQL starts in a temporary folder (fsync off); with it,
 * that server is used (it needs CREATEDB). A template database is migrated and seeded once, and
 * each test file clones it. Ends with the plain `N passed, N failed` line CI reads, because tap's
 * own summary is not one of the formats it recognises (PITFALLS.md §6).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import { migrateDatabase, seedCatalogue, startEmbeddedPostgres, createDatabase } from '@esp/db'
import { databaseUrl, TEST_ENV } from '@esp/db/testing'
import { ensureExplorerBuilt } from '@esp/explorer'

const root = path.resolve(import.meta.dirname, '..')
const requested = process.argv.slice(2)

function testFiles (dir: string): string[] {
  let found: string[] = []
  for (const entry of readdirSync(dir)) {
    if (entry === 'node_modules' || entry === 'bench' || entry.startsWith('.')) continue
    const full = path.join(dir, entry)
    if (statSync(full).isDirectory()) found = found.concat(testFiles(full))
    else if (entry.endsWith('.test.ts')) found.push(path.relative(root, full))
  }
  return found
}

const files = requested.length > 0
  ? requested
  : ['packages', 'services', 'test'].flatMap((top) => testFiles(path.join(root, top))).sort()

// Built once, before any test file starts a platform that serves it (and would build it itself).
if (await ensureExplorerBuilt()) console.log('# built the explorer')

const external = process.env.DATABASE_URL
let tempDir: string | undefined
let stopEmbedded: (() => Promise<void>) | undefined
let adminUrl: string
if (external === undefined || external === '') {
  tempDir = mkdtempSync(path.join(tmpdir(), 'esp-test-'))
  chmodSync(tempDir, 0o755)
  const server = await startEmbeddedPostgres({ dataDir: tempDir, durable: false })
  adminUrl = server.adminUrl
  stopEmbedded = server.stop
  console.log('# test database: embedded PostgreSQL')
} else {
  adminUrl = external
  console.log(`# test database: ${new URL(external).host} (DATABASE_URL)`)
}

const template = `esp_t${randomBytes(4).toString('hex')}`
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
let exitCode = 1
let summary = { pass: 0, fail: 0, skip: 0 }
try {
  await admin.unsafe(`create database "${template}"`)
  const templateUrl = databaseUrl(adminUrl, template)
  await migrateDatabase(templateUrl)
  const seeded = createDatabase(templateUrl, { max: 1 })
  await seedCatalogue(seeded.sql)
  await seeded.close()

  const tap = path.join(root, 'node_modules', '.bin', 'tap')
  const child = spawn(tap, ['--reporter=tap', ...files], {
    cwd: root,
    env: { ...process.env, TZ: 'UTC', [TEST_ENV.adminUrl]: adminUrl, [TEST_ENV.template]: template },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  let tail = ''
  // CI keeps only the end of the log, so the failed assertions are repeated there.
  const failures: string[] = []
  let pending = ''
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk)
    const text = chunk.toString('utf8')
    tail = (tail + text).slice(-4096)
    const lines = (pending + text).split('\n')
    pending = lines.pop() ?? ''
    for (const line of lines) if (/^\s*not ok /.test(line) && failures.length < 50) failures.push(line)
  })
  exitCode = await new Promise<number>((resolve) => { child.on('close', (code) => { resolve(code ?? 1) }) })
  if (failures.length > 0) console.log(`# failed:\n${failures.join('\n')}`)
  const line = tail.split('\n').reverse().find((l) => l.startsWith('# { total:')) ?? ''
  const count = (name: string): number => Number(new RegExp(`${name}: (\\d+)`).exec(line)?.[1] ?? 0)
  summary = { pass: count('pass'), fail: count('fail'), skip: count('skip') }
  if (line === '' && exitCode !== 0) summary.fail = Math.max(summary.fail, 1)
} finally {
  // Test databases left by crashed files carry the template's name as a prefix.
  const leftovers = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${`${template}%`}`
  for (const { datname } of leftovers) await admin.unsafe(`drop database if exists "${datname}" with (force)`)
  await admin.end()
  await stopEmbedded?.()
  if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true })
}
console.log(`${summary.pass} passed, ${summary.fail} failed${summary.skip > 0 ? `, ${summary.skip} skipped` : ''}`)
process.exit(exitCode)
