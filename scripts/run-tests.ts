/**
 * `pnpm test`: every test file of the workspace under tap, against a real PostgreSQL.
 * Without DATABASE_URL an embedded PostgreSQL starts in a temporary folder (fsync off); with it,
 * that server is used (it needs CREATEDB). A template database is migrated and seeded once, and
 * each test file clones it. Ends with the plain `N passed, N failed` line CI reads, because tap's
 * own summary is not one of the formats it recognises (PITFALLS.md §6).
 *
 * Parts: arguments name test files or folders (every test file under them). `--unit` keeps only
 * the unit tests, the files named `*.unit.test.ts` (no database, no network, no child process);
 * `--no-unit` keeps the others. When every file selected is a unit test, no database starts, the
 * explorer is not built. Unit tests always run first, one after another in a single process
 * (through tsx) instead of a tap process each: the import graph (domain, http, drizzle, fastify)
 * is loaded once, which makes them several times cheaper; their TAP output is tap's own.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { TEST_ENV } from '@esp/db/testing'

const root = path.resolve(import.meta.dirname, '..')
const UNIT = '.unit.test.ts'
/** A run of unit tests in one process that takes longer than this has hung. */
const UNIT_TIMEOUT_MS = 600_000

const args = process.argv.slice(2)

if (args[0] === '--in-process') {
  // The child of a unit run: tap's root test collects every file's tests and prints the summary
  // when the process ends. A file that cannot be loaded is one failure; the others still run.
  const { default: t } = await import('tap')
  for (const file of args.slice(1)) {
    try {
      await import(pathToFileURL(path.resolve(root, file)).href)
    } catch (err) {
      t.fail(`${file} could not be loaded: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
} else {
  await main()
}

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

interface Summary { pass: number, fail: number, skip: number }

/** Runs a TAP-printing command, echoing its output; its exit code and the counts of its closing line. */
async function runTap (command: string, commandArgs: string[], env: NodeJS.ProcessEnv, timeoutMs?: number): Promise<{ exitCode: number, summary: Summary }> {
  const child = spawn(command, commandArgs, { cwd: root, env: { ...process.env, TZ: 'UTC', ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  const timer = timeoutMs === undefined
    ? undefined
    : setTimeout(() => { console.log(`# timed out after ${timeoutMs / 1000} s`); child.kill('SIGTERM') }, timeoutMs)
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
  const exitCode = await new Promise<number>((resolve) => { child.on('close', (code) => { resolve(code ?? 1) }) })
  clearTimeout(timer)
  if (failures.length > 0) console.log(`# failed:\n${failures.join('\n')}`)
  const line = tail.split('\n').reverse().find((l) => l.startsWith('# { total:')) ?? ''
  const count = (name: string): number => Number(new RegExp(`${name}: (\\d+)`).exec(line)?.[1] ?? 0)
  const summary = { pass: count('pass'), fail: count('fail'), skip: count('skip') }
  if (line === '' && exitCode !== 0) summary.fail = Math.max(summary.fail, 1)
  return { exitCode, summary }
}

function report (summary: Summary): void {
  console.log(`${summary.pass} passed, ${summary.fail} failed${summary.skip > 0 ? `, ${summary.skip} skipped` : ''}`)
}

async function main (): Promise<void> {
  const only = args.includes('--unit') ? 'unit' : args.includes('--no-unit') ? 'other' : 'all'
  const requested = args.filter((arg) => arg !== '--unit' && arg !== '--no-unit')
  const named = requested.length > 0 ? requested : ['packages', 'services', 'test']
  const isDirectory = (name: string): boolean => existsSync(path.resolve(root, name)) && statSync(path.resolve(root, name)).isDirectory()
  const files = named
    .flatMap((name) => isDirectory(name) ? testFiles(path.resolve(root, name)).sort() : [name])
    .filter((file) => only === 'all' || (only === 'unit') === file.endsWith(UNIT))
  if (files.length === 0) {
    console.log(`# no ${only === 'unit' ? 'unit ' : ''}test files in ${named.join(' ')}`)
    report({ pass: 0, fail: 0, skip: 0 })
    process.exit(0)
  }

  // The unit tests run first, all in one process: a tap process each cost seconds of CPU apiece.
  const units = files.filter((file) => file.endsWith(UNIT))
  const others = files.filter((file) => !file.endsWith(UNIT))
  let unitRun = { exitCode: 0, summary: { pass: 0, fail: 0, skip: 0 } }
  if (units.length > 0) {
    // Empty: a unit test that reaches for a test database fails at once, saying so.
    unitRun = await runTap(process.execPath, ['--conditions=@esp/source', '--import', 'tsx', fileURLToPath(import.meta.url), '--in-process', ...units],
      { [TEST_ENV.adminUrl]: '', [TEST_ENV.template]: '' }, UNIT_TIMEOUT_MS)
  }
  if (others.length === 0) {
    report(unitRun.summary)
    process.exit(unitRun.exitCode)
  }

  const { startEmbeddedPostgres } = await import('@esp/db')
  const { createTemplateDatabase, dropTemplateDatabases } = await import('@esp/db/testing')
  const { ensureExplorerBuilt } = await import('@esp/explorer')

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
  let exitCode = 1
  let summary: Summary = { pass: 0, fail: 0, skip: 0 }
  try {
    await createTemplateDatabase(adminUrl, template)
    const tap = path.join(root, 'node_modules', '.bin', 'tap')
    const result = await runTap(tap, ['--reporter=tap', ...others], { [TEST_ENV.adminUrl]: adminUrl, [TEST_ENV.template]: template })
    exitCode = result.exitCode === 0 ? unitRun.exitCode : result.exitCode
    const { pass, fail, skip } = unitRun.summary
    summary = { pass: result.summary.pass + pass, fail: result.summary.fail + fail, skip: result.summary.skip + skip }
  } finally {
    await dropTemplateDatabases(adminUrl, template)
    await stopEmbedded?.()
    if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true })
  }
  report(summary)
  process.exit(exitCode)
}
