import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { freePort, startEmbeddedPostgres } from '@esp/db'
import { accountWithDevice, logIn, postmasterPid, processGone, readingsBody, waitGone } from '@esp/test-helpers/embedded'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

/**
 * The embedded PostgreSQL lives and dies with the platform (issue 21): a SIGKILL of the platform
 * (as the OOM killer sends) stops the database too, and whatever a crash left under DATA_DIR does
 * not keep the next plain start from coming up.
 */
const ENV = { PORT: '0', MQTT_PORT: '0', RATE_LIMIT_PER_MINUTE: '1000000', PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0', PRESSURE_MAX_DB_WAIT_MS: '0' }
const TIMES = ['2026-11-20T10:00:00Z', '2026-11-20T10:01:00Z', '2026-11-20T10:02:00Z']

async function storedValues (base: string, device: number): Promise<unknown> {
  const res = await fetch(`${base}/v0/devices/${device}/readings?sensor_id=55&rollup=0s&from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z`)
  return ((await res.json()) as { readings?: Array<[string, number]> }).readings?.map(([, value]) => value)
}

t.test('kill -9 of the platform: the database stops by itself, a plain restart finds the data; a running platform is left alone', async (t) => {
  const dataDir = tempDataDir(t)
  const first = startProcess(t, 'scripts/start.ts', { ...ENV, DATA_DIR: dataDir })
  const base = (await first.waitFor(HTTP_LINE))[1] ?? ''
  const { token, device } = await accountWithDevice(base, 'crash')
  const post = await fetch(`${base}/v0/devices/${device}/readings`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: readingsBody(TIMES, 21.5) })
  t.ok(post.ok, 'readings stored before the crash')
  const pid = postmasterPid(dataDir)
  if (pid === undefined) throw new Error('no postmaster.pid under DATA_DIR')

  // A second start on the same DATA_DIR (here from this process, as the second platform's start
  // would) must not stop the database the first one uses.
  await t.rejects(startEmbeddedPostgres({ dataDir }), { message: `already running (pid ${pid}) for another platform process` }, 'a second start on the same DATA_DIR is refused')
  t.equal((await fetch(`${base}/health/ready`)).status, 200, 'the first platform still has its database')

  first.child.kill('SIGKILL')
  await first.exited
  const killedAt = Date.now()
  t.ok(await waitGone(pid, 10_000), 'the postmaster is gone after the platform was killed')
  t.comment(`postmaster gone ${Date.now() - killedAt} ms after the kill`)
  t.notOk(existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), 'it shut down cleanly (it removed its lock file)')

  const second = startProcess(t, 'scripts/start.ts', { ...ENV, DATA_DIR: dataDir })
  const again = (await second.waitFor(HTTP_LINE))[1] ?? ''
  t.same(await storedValues(again, device), [21.5, 21.5, 21.5], 'the readings written before the crash are there')
  t.ok((await logIn(again, 'crash')).length > 0, 'the user written before the crash logs in')
  second.child.kill('SIGTERM')
  t.equal(await second.exited, 0)
})

t.test('a start after an older version crashed: its orphaned postmaster is stopped, and a stale lock removed', async (t) => {
  const dataDir = tempDataDir(t)
  const clusterDir = path.join(dataDir, 'pg')
  const first = startProcess(t, 'scripts/start.ts', { ...ENV, DATA_DIR: dataDir })
  const base = (await first.waitFor(HTTP_LINE))[1] ?? ''
  const { token, device } = await accountWithDevice(base, 'orphan')
  const post = await fetch(`${base}/v0/devices/${device}/readings`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: readingsBody(TIMES, 7) })
  t.ok(post.ok, 'readings stored')
  first.child.kill('SIGTERM')
  t.equal(await first.exited, 0)

  // What an older version left after a SIGKILL: a postmaster of this cluster, re-parented to init.
  const binary = readFileSync(path.join(clusterDir, 'postmaster.opts'), 'utf8').split(' ')[0] ?? ''
  const ids = process.getuid?.() === 0
    ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
    : {}
  const args = ['-D', clusterDir, '-p', String(await freePort()), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=']
  const launcher = spawn('sh', ['-c', '"$@" </dev/null >/dev/null 2>&1 &', 'sh', binary, ...args], { ...ids, stdio: 'ignore' })
  await new Promise((resolve) => launcher.once('exit', resolve))
  let orphan: number | undefined
  for (let i = 0; i < 100 && orphan === undefined; i++) {
    const lines = existsSync(path.join(clusterDir, 'postmaster.pid')) ? readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n') : []
    if (lines[7]?.trim() === 'ready') orphan = Number(lines[0])
    else await new Promise((resolve) => setTimeout(resolve, 100))
  }
  if (orphan === undefined) throw new Error('the orphan did not start')
  const orphanPid = orphan
  t.teardown(() => { if (!processGone(orphanPid)) process.kill(orphanPid, 'SIGQUIT') })

  const second = startProcess(t, 'scripts/start.ts', { ...ENV, DATA_DIR: dataDir })
  const again = (await second.waitFor(HTTP_LINE))[1] ?? ''
  t.match(second.output(), `stopping the embedded PostgreSQL (pid ${orphanPid}) that an earlier run of the platform left running`)
  t.ok(await waitGone(orphanPid, 1000), 'the orphan is gone')
  t.same(await storedValues(again, device), [7, 7, 7], 'the data is there')
  second.child.kill('SIGTERM')
  t.equal(await second.exited, 0)

  // A lock file whose pid now belongs to an unrelated live process (pids are reused after a reboot).
  writeFileSync(path.join(clusterDir, 'postmaster.pid'), `${process.pid}\n${clusterDir}\n`)
  const server = await startEmbeddedPostgres({ dataDir })
  t.ok(server.url.startsWith('postgres://'), 'a stale lock naming a live unrelated process does not stop the start')
  await server.stop()
})
