import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { accountWithDevice, postmasterPid, readingsBody, waitGone } from '@esp/test-helpers/embedded'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

/**
 * The embedded PostgreSQL is supervised (issue 33): killed under a running platform, it is started
 * again on its port without help; meanwhile requests get 503 and /health/live stays 200, since
 * the process recovers by itself; the server's log is kept under DATA_DIR with the restart in it.
 */
const ENV = { PORT: '0', MQTT_PORT: '0', RATE_LIMIT_PER_MINUTE: '1000000', PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0', PRESSURE_MAX_DB_WAIT_MS: '0' }
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const status = async (url: string): Promise<number> => await fetch(url, { signal: AbortSignal.timeout(5000) }).then((res) => res.status, () => 0)

t.test('kill -9 of the embedded postmaster: it comes back by itself, and the platform with it', async (t) => {
  const dataDir = tempDataDir(t)
  const platform = startProcess(t, 'scripts/start.ts', { ...ENV, DATA_DIR: dataDir })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  const { token, device } = await accountWithDevice(base, 'restart')
  const post = async (times: string[], value: number): Promise<Response> => await fetch(`${base}/v0/devices/${device}/readings`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: readingsBody(times, value), signal: AbortSignal.timeout(10_000)
  })
  t.ok((await post(['2026-11-20T10:00:00Z'], 1)).ok, 'a write before the kill')

  const pid = postmasterPid(dataDir)
  if (pid === undefined) throw new Error('no postmaster.pid under DATA_DIR')
  process.kill(pid, 'SIGKILL')
  t.ok(await waitGone(pid, 5000), 'the postmaster is gone')
  const killedAt = Date.now()

  const live: number[] = []
  const ready: number[] = []
  for (;;) {
    live.push(await status(`${base}/health/live`))
    const now = await status(`${base}/health/ready`)
    ready.push(now)
    if (now === 200) break
    if (Date.now() - killedAt > 30_000) throw new Error(`not ready 30 s after the kill; ready answered ${ready.join(',')}\n${platform.output()}`)
    await sleep(100)
  }
  t.comment(`ready again ${Date.now() - killedAt} ms after the kill (answers: ${[...new Set(ready)].join(', ')})`)
  t.ok(live.every((code) => code === 200), `/health/live stayed 200 (${[...new Set(live)].join(', ')})`)
  t.ok(ready.every((code) => code === 200 || code === 503), 'ready answered 503 meanwhile, nothing else')

  const after = await post(['2026-11-20T10:01:00Z'], 2)
  t.equal(after.status, 200, 'a write after the restart is acknowledged')
  const read = await fetch(`${base}/v0/devices/${device}/readings?sensor_id=55&rollup=0s&from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z`)
  t.same(((await read.json()) as { readings: Array<[string, number]> }).readings.map(([, value]) => value), [2, 1], 'both writes are stored')

  t.match(platform.output(), `the embedded PostgreSQL (pid ${pid}) stopped (killed by SIGKILL): starting it again on port`, 'the restart is an operator line')
  t.match(platform.output(), /the embedded PostgreSQL is running again/)
  const logFile = path.join(dataDir, 'pg.log')
  t.ok(existsSync(logFile), 'the server log is kept under DATA_DIR')
  const log = readFileSync(logFile, 'utf8')
  t.match(log, `[platform] the embedded PostgreSQL (pid ${pid}) stopped (killed by SIGKILL)`, 'the log notes the restart')
  t.match(log, /database system was interrupted|was not properly shut down/, 'and the server\'s own recovery')

  platform.child.kill('SIGTERM')
  t.equal(await platform.exited, 0, 'a signal still stops it cleanly')
})
