import t from 'tap'
import { createBoss } from '@esp/jobs'
import { startPgCluster } from '@esp/test-helpers/pg-cluster'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

/**
 * No dependency failure ends a process (issue 33): a platform process and an exporter on one
 * external database, which is stopped (immediately, then fast) and started again. Meanwhile
 * pg-boss and every pool meet 57P01, refused connections and 57P03; both stay up and answer
 * ready again without help.
 */
const ENV = { PORT: '0', MQTT_PORT: '0', RATE_LIMIT_PER_MINUTE: '1000000', PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0', PRESSURE_MAX_DB_WAIT_MS: '0' }
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

async function readyWithin (base: string, ms: number): Promise<number> {
  const started = Date.now()
  for (;;) {
    const status = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(5000) }).then((res) => res.status, () => 0)
    if (status === 200) return Date.now() - started
    if (Date.now() - started > ms) throw new Error(`${base} not ready after ${ms} ms (last ${status})`)
    await sleep(100)
  }
}

t.test('a platform and an exporter stay up while their database restarts', async (t) => {
  const cluster = await startPgCluster(t)
  const env = { ...ENV, DATABASE_URL: cluster.url, JWT_SECRET: 'a'.repeat(64) }
  // Both run pg-boss (the whole platform includes the exporter).
  const processes = [
    startProcess(t, 'scripts/start.ts', { ...env, DATA_DIR: tempDataDir(t) }),
    startProcess(t, 'services/exporter/src/main.ts', { ...env, DATA_DIR: tempDataDir(t) })
  ]
  const bases = await Promise.all(processes.map(async (started) => (await started.waitFor(HTTP_LINE, 90_000))[1] ?? ''))
  const exits: Array<number | null> = []
  for (const started of processes) void started.exited.then((code) => { exits.push(code) })

  for (const stop of ['stopImmediate', 'stopFast'] as const) {
    await cluster[stop]()
    // Long enough for every pool, pg-boss loop and probe to meet the refused connections.
    await sleep(2000)
    await cluster.start()
    for (const base of bases) t.comment(`${stop}: ${base} ready ${await readyWithin(base, 30_000)} ms after the start`)
    t.same(exits, [], `after ${stop}, every process is still running`)
  }
  // pg-boss's loops meet the database again on their next tick: give them one.
  await sleep(2000)
  t.same(exits, [], 'every process is still running')
  for (const [i, started] of processes.entries()) {
    t.notMatch(started.output(), /closing after an error/, `process ${i} did not close on an error`)
    started.child.kill('SIGTERM')
    t.equal(await started.exited, 0, `process ${i} stops cleanly on SIGTERM`)
  }
})

t.test('a job that ends while the database restarts is recorded once it is back, and nothing rejects unhandled', async (t) => {
  const cluster = await startPgCluster(t)
  const errors: string[] = []
  const boss = createBoss({ url: cluster.url, onError: (err) => { errors.push(err.message) } })
  await boss.start()
  t.teardown(async () => { await boss.stop({ graceful: false, wait: true }) })
  await boss.createQueue('restart-test')
  let started!: () => void
  const running = new Promise<void>((resolve) => { started = resolve })
  let finish!: () => void
  const finished = new Promise<void>((resolve) => { finish = resolve })
  await boss.work('restart-test', { pollingIntervalSeconds: 0.5 }, async () => {
    started()
    await finished
    return { done: true }
  })
  const id = await boss.send('restart-test', {})
  await running
  // pg-boss records the completion without awaiting it: before issue 33 this rejection ended the process.
  await cluster.stopFast()
  finish()
  await sleep(1500)
  await cluster.start()
  for (const deadline = Date.now() + 20_000; ;) {
    const job = id === null ? null : await boss.getJobById('restart-test', id).catch(() => null)
    if (job?.state === 'completed') break
    if (Date.now() > deadline) throw new Error(`the job is ${job?.state ?? 'unknown'}; errors: ${errors.join('; ')}`)
    await sleep(200)
  }
  t.pass('the completion was recorded after the restart')
})
