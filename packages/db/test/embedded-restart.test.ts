import { chmodSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import postgres from 'postgres'
import { databaseUnavailability, embeddedDatabaseStatus, startEmbeddedPostgres } from '@esp/db'
import { RotatingLog } from '../src/rotating-log.js'
import { postmasterPid, processGone, waitGone } from '@esp/test-helpers/embedded'

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

interface Tap { teardown: (fn: () => unknown) => void }

function tempDir (t: Tap): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-restart-'))
  chmodSync(dir, 0o755)
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

async function until (what: string, ms: number, check: () => boolean | Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + ms; !(await check());) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

t.test('a full disk and short memory are a 503 with the reason, and only an unreachable server closes the gate', async (t) => {
  const pgError = (code: string, message: string): Error => Object.assign(new Error(message), { code, severity: 'ERROR' })
  t.match(databaseUnavailability(pgError('53100', 'could not extend file "base/5/16384": wrote only 4096 of 8192 bytes')),
    { reason: 'the database is unavailable: its disk is full', certain: true, unreachable: false })
  t.match(databaseUnavailability(pgError('58030', 'could not write to file "pg_wal/xlogtemp.123": No space left on device')), { reason: /its disk is full/, unreachable: false })
  t.match(databaseUnavailability(pgError('XX000', 'could not write block 7: No space left on device')), { reason: /its disk is full/ })
  t.match(databaseUnavailability(pgError('53200', 'out of memory')), { reason: /out of memory/, unreachable: false })
  t.match(databaseUnavailability(pgError('53300', 'sorry, too many clients already')), { reason: /no connection slots/, unreachable: true })
  // drizzle wraps the driver's error
  t.match(databaseUnavailability(Object.assign(new Error('Failed query: insert …'), { cause: pgError('53100', 'disk full') })), { reason: /its disk is full/ })
  t.equal(databaseUnavailability(pgError('58030', 'could not read block 7: Input/output error')), null, 'another I/O error is a defect, not a full disk')
  t.equal(databaseUnavailability(pgError('23505', 'duplicate key')), null)
})

t.test('the server log is bounded: the newest lines in the file and one predecessor', async (t) => {
  const file = path.join(tempDir(t), 'pg.log')
  const log = new RotatingLog(file, 16 * 1024)
  for (let i = 0; i < 1000; i++) log.write(`line ${i} ${'x'.repeat(40)}\n`)
  log.close()
  t.ok(statSync(file).size <= 8 * 1024 && statSync(`${file}.1`).size <= 8 * 1024, 'each half stays within its share')
  t.match(readFileSync(file, 'utf8'), /line 999 x+\n$/, 'the newest line is kept')
  t.notMatch(readFileSync(`${file}.1`, 'utf8'), /line 0 /, 'the oldest lines are gone')

  // A write that fails (a full disk; here a folder that is gone) is dropped, and said so later.
  const gone = path.join(tempDir(t), 'sub', 'pg.log')
  const lossy = new RotatingLog(gone, 16 * 1024)
  lossy.write('lost line\n')
  t.notOk(existsSync(gone))
  renameSync(tempDir(t), path.dirname(gone))
  lossy.write('kept line\n')
  lossy.close()
  t.equal(readFileSync(gone, 'utf8'), '[10 bytes of this log were lost: the disk was full or the file could not be written]\nkept line\n')
})

t.test('a postmaster killed with SIGKILL is started again on its port; a data folder that is gone fails liveness until it is back', async (t) => {
  const dataDir = tempDir(t)
  const notices: string[] = []
  const server = await startEmbeddedPostgres({ dataDir, notice: (line) => { notices.push(line) }, restart: { firstDelayMs: 50, maxDelayMs: 200, attemptsBeforeFailure: 3 } })
  t.teardown(server.stop)
  const sql = postgres(server.url, { max: 1, onnotice: () => {}, connect_timeout: 2 })
  t.teardown(async () => { await sql.end() })
  await sql`create table kept (n int)`
  await sql`insert into kept values (1)`
  t.equal(server.logFile, path.join(dataDir, 'pg.log'))
  t.match(readFileSync(server.logFile, 'utf8'), /database system is ready to accept connections/, 'the server log is kept under DATA_DIR')

  const first = postmasterPid(dataDir) ?? 0
  process.kill(first, 'SIGKILL')
  await until('the restart', 30_000, () => notices.some((line) => line.includes('is running again')))
  t.match(notices.join('\n'), `the embedded PostgreSQL (pid ${first}) stopped (killed by SIGKILL): starting it again on port`)
  t.notOk(embeddedDatabaseStatus().outage, 'no outage once it runs')
  await until('a query on the restarted server', 10_000, async () => await sql`select count(*)::int as n from kept`.then(([row]) => row?.n === 1, () => false))
  t.pass('the data is there, on the same URL')

  // The cluster folder goes away (a mistaken cleanup): attempts fail, liveness fails; back, it recovers.
  const second = postmasterPid(dataDir) ?? 0
  const aside = path.join(dataDir, 'pg-aside')
  process.kill(second, 'SIGKILL')
  t.ok(await waitGone(second, 5000))
  renameSync(path.join(dataDir, 'pg'), aside)
  await until('the failure', 30_000, () => embeddedDatabaseStatus().failure !== null)
  t.match(embeddedDatabaseStatus().failure, /data folder .* is gone/)
  renameSync(aside, path.join(dataDir, 'pg'))
  await until('the recovery', 30_000, () => embeddedDatabaseStatus().failure === null && embeddedDatabaseStatus().outage === null)
  t.match(readFileSync(server.logFile, 'utf8'), /database system was interrupted|database system is ready/, 'the log of the restarts is appended')

  // stop() in the middle of a restart: nothing is left running.
  const third = postmasterPid(dataDir) ?? 0
  process.kill(third, 'SIGKILL')
  await sleep(20)
  await server.stop()
  await sleep(500)
  const left = postmasterPid(dataDir)
  t.ok(left === undefined || processGone(left), 'no postmaster after stop()')
  t.equal(embeddedDatabaseStatus().outage, null, 'a stopped server reports nothing')
})
