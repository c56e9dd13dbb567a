import { existsSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { accountWithDevice, postmasterPid, processGone, readingsBody } from '@esp/test-helpers/embedded'
import { HTTP_LINE, startProcess, tempDataDir } from '@esp/test-helpers/process'

const POSTS = 24
const LOGINS = 8
/** the slow half of the requests sends the rest of its body this long after Ctrl+C */
const SLOW_MS = 1500

interface Gated {
  body: ReadableStream<Uint8Array>
  /** resolves once the client has taken the first part (the request line and headers are out) */
  started: Promise<void>
}

/** A request body sent in two parts: the second one only after `gate`. */
function gatedBody (text: string, gate: Promise<void>): Gated {
  const bytes = new TextEncoder().encode(text)
  const half = Math.floor(bytes.length / 2)
  let markStarted = (): void => {}
  const started = new Promise<void>((resolve) => { markStarted = resolve })
  let part = 0
  const body = new ReadableStream<Uint8Array>({
    async pull (controller) {
      if (part++ === 0) {
        controller.enqueue(bytes.subarray(0, half))
        markStarted()
        return
      }
      await gate
      controller.enqueue(bytes.subarray(half))
      controller.close()
    }
  }, { highWaterMark: 0 })
  return { body, started }
}

t.test('Ctrl+C (SIGINT to the process group) with requests in flight: all answered 2xx, then the database stops', async (t) => {
  const dataDir = tempDataDir(t)
  // detached: the platform leads a process group of its own, as a shell's foreground job does.
  const platform = startProcess(t, 'scripts/start.ts', {
    PORT: '0', MQTT_PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '1000000', PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0', PRESSURE_MAX_DB_WAIT_MS: '0'
  }, { detached: true })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  const { token, device } = await accountWithDevice(base, 'ctrlc')
  const postmaster = postmasterPid(dataDir)
  if (postmaster === undefined) throw new Error('no postmaster.pid under DATA_DIR')
  const pgid = platform.child.pid
  if (pgid === undefined) throw new Error('no pid')

  let interrupt = (): void => {}
  const interrupted = new Promise<void>((resolve) => { interrupt = resolve })
  const slowGate = interrupted.then(async () => { await new Promise((resolve) => setTimeout(resolve, SLOW_MS)) })
  const quickGate = interrupted.then(async () => { await new Promise((resolve) => setTimeout(resolve, 100)) })
  const start = Date.UTC(2026, 0, 1)
  const requests = [
    // Readings posts (writes), each request its own minutes.
    ...Array.from({ length: POSTS }, (_, i) => ({
      url: `${base}/v0/devices/${device}/readings`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      text: readingsBody([0, 1, 2].map((k) => new Date(start + (i * 3 + k) * 60_000).toISOString()), i),
      slow: i % 2 === 0
    })),
    // Log-ins (reads of the user and its password hash).
    ...Array.from({ length: LOGINS }, (_, i) => ({
      url: `${base}/v0/sessions`,
      headers: { 'content-type': 'application/json' },
      text: JSON.stringify({ username: 'ctrlc', password: 'a long password' }),
      slow: i % 2 === 0
    }))
  ].map(({ url, headers, text, slow }) => {
    const { body, started } = gatedBody(text, slow ? slowGate : quickGate)
    const answer = fetch(url, { method: 'POST', headers, body, duplex: 'half' })
      .then(async (res) => `${res.status} ${(await res.text()).slice(0, 200)}`, (err: unknown) => `failed: ${String(err)}`)
    return { started, answer }
  })
  await Promise.all(requests.map(async ({ started }) => { await started }))
  // Time for the server to read the request heads.
  await new Promise((resolve) => setTimeout(resolve, 300))

  process.kill(-pgid, 'SIGINT')
  interrupt()
  const answers = await Promise.all(requests.map(async ({ answer }) => await answer))
  const bad = answers.filter((answer) => !/^2\d\d /.test(answer))
  t.same(bad, [], `all ${answers.length} requests in flight at Ctrl+C were answered 2xx`)
  t.equal(await platform.exited, 0, 'the platform exits 0')
  t.match(platform.output(), /"msg":"closed"/, 'the shutdown ran to its end')
  t.ok(processGone(postmaster), 'the postmaster is gone')
  t.notOk(existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), 'it shut down cleanly')
})
