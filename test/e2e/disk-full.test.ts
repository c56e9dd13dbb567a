import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import t from 'tap'
import postgres from 'postgres'
import { accountWithDevice } from '@esp/test-helpers/embedded'
import { HTTP_LINE, startProcess } from '@esp/test-helpers/process'

/**
 * DATA_DIR on a disk that fills to the last byte (issue 33): writes are refused with 503, Retry-After
 * and the full disk as the reason, never a 500, and nothing refused is stored; once space is freed
 * the platform (its embedded PostgreSQL started again if it stopped) is ready and writes succeed,
 * without help. /health/live stays 200 throughout: the process recovers by itself.
 */
const ENV = { PORT: '0', MQTT_PORT: '0', RATE_LIMIT_PER_MINUTE: '1000000', PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0', PRESSURE_MAX_DB_WAIT_MS: '0' }
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const BASE_TIME = Date.parse('2026-10-01T00:00:00Z')

/** Writes until the disk refuses even one more byte; the file's size. */
function fill (file: string): number {
  const fd = openSync(file, 'w')
  let size = 0
  try {
    for (const chunk of [1 << 20, 1 << 12, 1]) {
      const bytes = Buffer.alloc(chunk, 7)
      for (;;) {
        try {
          size += writeSync(fd, bytes)
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err
          break
        }
      }
    }
  } finally {
    closeSync(fd)
  }
  return size
}

interface Answer { status: number, retryAfter: string | null, body: { id?: string, message?: string } }

/**
 * Writes WAL through a superuser session of the embedded server (its password and port are under
 * DATA_DIR) until the server fails, then posts until the platform has seen its postmaster stop.
 */
async function exhaustWal (dataDir: string, post: () => Promise<Answer>): Promise<Answer[]> {
  const { password } = JSON.parse(readFileSync(path.join(dataDir, 'pg-secrets.json'), 'utf8')) as { password: string }
  const port = readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[3] ?? ''
  const sql = postgres(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    for (let i = 0; i < 1000; i++) await sql`select pg_logical_emit_message(false, 'filler', repeat('x', 1000000))`
  } catch {
    // the server failed to write its WAL, as it should
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {})
  }
  const answers: Answer[] = []
  for (let i = 0; i < 10; i++) {
    answers.push(await post())
    await sleep(200)
  }
  return answers
}

/** A 200 MB tmpfs for DATA_DIR; why not, when it cannot be mounted. */
function mountSmallDisk (): { dataDir: string, unmountable: string | false } {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'esp-full-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=200m,mode=755', 'tmpfs', dataDir], { stdio: 'pipe' })
    return { dataDir, unmountable: false }
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true })
    const why = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? String(err)
    return { dataDir, unmountable: `a small tmpfs for DATA_DIR could not be mounted (this test needs root or CAP_SYS_ADMIN): ${why}` }
  }
}

const { dataDir, unmountable } = mountSmallDisk()

t.test('a full disk under DATA_DIR: 503 with the reason, then back by itself once there is space', { skip: unmountable }, async (t) => {
  const platform = startProcess(t, 'scripts/start.ts', { ...ENV, DATA_DIR: dataDir })
  // Registered after the process's own teardown, this one stops it first if it still runs: a busy mount does not unmount.
  t.teardown(async () => {
    if (platform.child.exitCode === null && platform.child.signalCode === null) {
      platform.child.kill('SIGKILL')
      await platform.exited
    }
    for (let i = 0; i < 50; i++) {
      try {
        execFileSync('umount', [dataDir], { stdio: 'pipe' })
        break
      } catch {
        await sleep(100)
      }
    }
    rmSync(dataDir, { recursive: true, force: true })
  })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  const { token, device } = await accountWithDevice(base, 'full')
  let slot = 0
  const post = async (): Promise<Answer & { times: number[] }> => {
    // Many readings per request, so that the table and the WAL soon need pages the disk cannot give.
    const times = Array.from({ length: 500 }, () => BASE_TIME + (slot++) * 1000)
    const res = await fetch(`${base}/v0/devices/${device}/readings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: times.map((at) => ({ recorded_at: new Date(at).toISOString(), sensors: [{ id: 55, value: 1 }] })) }),
      signal: AbortSignal.timeout(10_000)
    })
    const text = await res.text()
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: text === '' ? {} : JSON.parse(text) as { id?: string, message?: string }, times }
  }
  t.equal((await post()).status, 200, 'a write while there is space')

  const filler = path.join(dataDir, 'filler')
  t.comment(`filled the disk with ${fill(filler)} bytes`)
  const answers: Array<Awaited<ReturnType<typeof post>>> = []
  const liveAnswers = new Set<number>()
  const acknowledged = new Set<number>()
  for (const started = Date.now(); Date.now() - started < 20_000;) {
    const answer = await post()
    answers.push(answer)
    if (answer.status === 200) for (const at of answer.times) acknowledged.add(at)
    liveAnswers.add((await fetch(`${base}/health/live`)).status)
    // Enough refusals seen, with the server's own reason among them.
    if (answers.filter((a) => a.status === 503).length >= 5 && answers.some((a) => /disk is full/.test(a.body.message ?? ''))) break
    if (answer.status === 200) fill(`${filler}-${answers.length}`)
    else await sleep(100)
  }
  const statuses = answers.map((a) => a.status)
  t.comment(`answers while the disk was full: ${statuses.join(' ')}`)
  t.notOk(statuses.includes(500), 'never a 500')
  t.ok(statuses.every((status) => status === 200 || status === 503), 'only 200 and 503')
  const refused = answers.filter((a) => a.status === 503)
  t.ok(refused.length > 0, 'writes are refused')
  t.ok(refused.every((a) => a.retryAfter !== null && a.body.id === 'service_unavailable' && /database is unavailable/.test(a.body.message ?? '')), 'each in the one error shape, with Retry-After and the database as the reason')
  t.ok(refused.some((a) => /disk is full/.test(a.body.message ?? '')), `the full disk is named (${[...new Set(refused.map((a) => a.body.message))].join(' | ')})`)
  t.same([...liveAnswers], [200], '/health/live stays 200: the process recovers by itself')

  // The harder case: the WAL cannot grow either. PostgreSQL PANICs (`could not write to file
  // "pg_wal/…": No space left on device`), and its recovery cannot write the end-of-recovery
  // checkpoint, so the postmaster exits: the platform starts it again until there is space.
  const walAnswers = await exhaustWal(dataDir, post)
  t.comment(`answers once the WAL could not grow: ${walAnswers.map((a) => a.status).join(' ')}`)
  t.notOk(walAnswers.some((a) => a.status !== 503), 'still only 503')
  t.ok(walAnswers.every((a) => a.retryAfter !== null && /database is unavailable/.test(a.body.message ?? '')), 'with Retry-After and the reason')
  t.ok(walAnswers.some((a) => /disk is full/.test(a.body.message ?? '')), `the full disk is named while the server cannot start (${[...new Set(walAnswers.map((a) => a.body.message))].join(' | ')})`)
  liveAnswers.add((await fetch(`${base}/health/live`)).status)
  t.same([...liveAnswers], [200], '/health/live still 200')

  execFileSync('sh', ['-c', `rm -f '${filler}'*`])
  const freedAt = Date.now()
  for (;;) {
    const ready = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(5000) }).then((res) => res.status, () => 0)
    if (ready === 200) break
    if (Date.now() - freedAt > 30_000) throw new Error(`not ready 30 s after space was freed\n${platform.output()}`)
    await sleep(200)
  }
  t.comment(`ready ${Date.now() - freedAt} ms after space was freed`)
  let after = await post()
  // The gate may still be closing behind the last refusal: one more try within a second.
  for (let i = 0; i < 10 && after.status === 503; i++) {
    await sleep(100)
    after = await post()
  }
  t.equal(after.status, 200, 'a write succeeds again')
  for (const at of after.times) acknowledged.add(at)

  const res = await fetch(`${base}/v0/devices/${device}/readings?sensor_id=55&rollup=0s&from=2026-10-01T00:00:00Z&to=2026-10-03T00:00:00Z`)
  const stored = new Set(((await res.json()) as { readings: Array<[string, number]> }).readings.map(([at]) => Date.parse(at)))
  t.ok([...acknowledged].every((at) => stored.has(at)), `every acknowledged reading is stored (${acknowledged.size} acknowledged, ${stored.size} stored)`)
  t.match(platform.output(), /the embedded PostgreSQL \(pid \d+\) stopped/, 'its postmaster stopped when the WAL could not grow')
  t.match(platform.output(), /the embedded PostgreSQL is running again/, 'and was started again once there was space')
  t.comment(platform.output().split('\n').filter((line) => line.includes('embedded PostgreSQL')).slice(0, 12).join('\n'))

  platform.child.kill('SIGTERM')
  t.equal(await platform.exited, 0, 'a signal still stops it cleanly')
})
