import t from 'tap'
import http from 'node:http'
import net from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadEngine, postgresRunner } from '@esp/db'
import { EXPORT_RETRY_AFTER_SECONDS } from '@esp/domain'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'

/**
 * Bounded exports (issue 33) over real sockets: a client that opens an export and never reads is
 * cut off after the idle time and its slot and database connection are freed; a caller over its
 * share gets 429 while others still get theirs; the process's limit stays a 503; one that reads
 * too slowly is stopped at the duration cap. The export is large enough (about 9 MB of CSV) that
 * an unread socket fills the kernel's buffers on both ends.
 */

const MINUTE = 60_000
const START = Date.UTC(2026, 0, 1)
/** minutes of readings of two sensors: 300,000 rows */
const MINUTES = 150_000
const IDLE_SECONDS = 3
const MAX_SECONDS = 4

interface Download { status: number, headers: http.IncomingHttpHeaders, body: Buffer }

t.test('idle, slow and greedy export clients', async (t) => {
  const { app, database } = await buildApi(t, {
    deps: { exportMaxConcurrent: 3, exportMaxPerCaller: { anonymous: 1, citizen: 2, researcher: 3 }, exportIdleSeconds: IDLE_SECONDS, exportMaxSeconds: MAX_SECONDS }
  })
  const sql = database.sql
  const owner = await signUp(app)
  const citizen = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const end = START + MINUTES * MINUTE
  const engine = await loadEngine(postgresRunner(sql))
  const months: Date[] = []
  for (let at = new Date(START); at.getTime() < end; at = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1))) months.push(at)
  await engine.prepare(postgresRunner(sql), [...months, new Date(end - 1)])
  await sql`
    insert into readings (device_id, sensor_id, recorded_at, value, raw_value)
    select ${device}, s, t, v, v
    from unnest(${[55, 56]}::int[]) as s, generate_series(${new Date(START).toISOString()}::timestamptz, ${new Date(end - MINUTE).toISOString()}::timestamptz, interval '1 minute') as t,
      lateral (select round((20 + 10 * sin(extract(epoch from t) / 86400) + s / 7.0)::numeric, 2)::float8 as v) x`
  await sql`analyze readings`
  const path = `/v0/devices/${device}/readings/export`

  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  t.teardown(() => { app.server.closeAllConnections() })

  /** A whole export, read as fast as it comes, from `localAddress` (each 127.x.y.z is an anonymous caller of its own). */
  const download = async (localAddress: string, token?: string): Promise<Download> => await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path, localAddress, agent: false, headers: token === undefined ? {} : bearer(token) }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => { chunks.push(chunk) })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }) })
      res.on('error', reject)
    }).on('error', reject)
  })

  /**
   * Opens an export and stops reading after its first bytes, as a client that never reads does:
   * resolves with the status once the answer begins. `rest` reads everything the socket still
   * gives, until the server's end or reset; `close` goes away.
   */
  const openUnread = async (localAddress: string, token?: string): Promise<{ status: number, rest: () => Promise<Buffer>, close: () => void }> => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress })
    const chunks: Buffer[] = []
    const closed = new Promise<void>((resolve) => { socket.once('close', () => { resolve() }) })
    socket.on('error', () => {})
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${token === undefined ? '' : `Authorization: Bearer ${token}\r\n`}\r\n`)
    const first = await new Promise<Buffer>((resolve) => { socket.once('data', resolve) })
    socket.pause()
    chunks.push(first)
    return {
      status: Number(/^HTTP\/1\.1 (\d{3})/.exec(first.toString('latin1'))?.[1] ?? 0),
      rest: async () => {
        socket.on('data', (chunk: Buffer) => { chunks.push(chunk) })
        socket.resume()
        await closed
        return Buffer.concat(chunks)
      },
      close: () => { socket.destroy() }
    }
  }

  /** The api's export connections, and the pool's connections that are not idle (this query's aside). */
  const connections = async (): Promise<{ exports: number, busy: number }> => {
    const [row] = await sql<{ exports: number, busy: number }[]>`
      select count(*) filter (where application_name = 'esp-export')::int as exports,
        count(*) filter (where application_name <> 'esp-export' and state <> 'idle' and pid <> pg_backend_pid())::int as busy
      from pg_stat_activity where datname = current_database()`
    return row ?? { exports: -1, busy: -1 }
  }
  const settled = async (): Promise<{ exports: number, busy: number }> => {
    const deadline = Date.now() + 10_000
    let now = await connections()
    while ((now.exports > 0 || now.busy > 0) && Date.now() < deadline) {
      await sleep(100)
      now = await connections()
    }
    return now
  }

  const full = await download('127.0.0.9')
  t.equal(full.status, 200)
  const lines = full.body.toString('latin1').split('\n').length - 1
  t.equal(lines, 2 * MINUTES + 1, 'the whole export: a header and a line per reading')

  t.test('a caller runs as many exports as its share; others still get theirs', async (t) => {
    const held = await openUnread('127.0.0.2')
    t.equal(held.status, 200)
    const again = await download('127.0.0.2')
    t.equal(again.status, 429, 'the same anonymous address: over its share')
    t.equal(again.headers['retry-after'], String(EXPORT_RETRY_AFTER_SECONDS))
    t.match(JSON.parse(again.body.toString('utf8')), { id: 'too_many_requests', message: String, errors: null, url: null })
    // A signed-in citizen has two.
    const mine = [await openUnread('127.0.0.4', citizen.token), await openUnread('127.0.0.4', citizen.token)]
    t.same(mine.map((c) => c.status), [200, 200], "a citizen's two exports")
    t.equal((await download('127.0.0.4', citizen.token)).status, 429, "and the citizen's third")
    const full3 = await download('127.0.0.5')
    t.equal(full3.status, 503, 'every slot of the process is taken')
    t.match(JSON.parse(full3.body.toString('utf8')), { id: 'service_unavailable' })
    // The citizen goes away: its slots come back, and another address gets one while the first holds its own.
    for (const client of mine) client.close()
    let other = await download('127.0.0.3')
    for (const deadline = Date.now() + 5000; other.status === 503 && Date.now() < deadline; other = await download('127.0.0.3')) await sleep(50)
    t.equal(other.status, 200, 'another address')
    t.equal(other.body.length, full.body.length, 'the whole of it')
    t.equal((await download('127.0.0.3')).status, 200, 'and another at once: a download that ended is off its share')
    held.close()
    t.same(await settled(), { exports: 0, busy: 0 }, 'every connection closed')
  })

  t.test('a client that never reads is cut off after the idle time and frees its slot', async (t) => {
    const opened = performance.now()
    const idle = [await openUnread('127.0.0.6'), await openUnread('127.0.0.7', citizen.token), await openUnread('127.0.0.8', citizen.token)]
    t.same(idle.map((c) => c.status), [200, 200, 200])
    t.equal((await download('127.0.0.9')).status, 503, 'every slot is held')
    // Slots come back once the idle clients are cut off, without their reading anything.
    let next = await download('127.0.0.9')
    for (const deadline = Date.now() + 15_000; next.status === 503 && Date.now() < deadline; next = await download('127.0.0.9')) await sleep(50)
    const waited = (performance.now() - opened) / 1000
    t.equal(next.status, 200, `an export again after ${waited.toFixed(1)} s`)
    t.ok(waited >= IDLE_SECONDS && waited < IDLE_SECONDS + 5, 'after about the idle time')
    t.equal(next.body.length, full.body.length, 'and the whole of it')
    t.same(await settled(), { exports: 0, busy: 0 }, 'the idle exports are gone, the pool idle')
    for (const client of idle) {
      const got = await client.rest()
      t.ok(got.length < full.body.length, `the idle client got ${got.length} bytes, not all`)
      t.not(got.subarray(-5).toString('latin1'), '0\r\n\r\n', 'and no end of the chunked body')
    }
  })

  t.test('a reader too slow for the duration cap is stopped at it', async (t) => {
    const started = performance.now()
    const trickle = new Promise<{ bytes: number, complete: boolean }>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port, path, localAddress: '127.0.0.10', agent: false }, (res) => {
        let bytes = 0
        // 64 KiB every 100 ms: never idle, and too slow for 9 MB within the cap.
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length
          res.pause()
          setTimeout(() => { res.resume() }, 100 * chunk.length / 65_536)
        })
        res.on('end', () => { resolve({ bytes, complete: res.complete }) })
        res.on('error', () => { resolve({ bytes, complete: false }) })
        res.on('aborted', () => { resolve({ bytes, complete: false }) })
      }).on('error', reject)
    })
    // The server stops the export at the cap; what it had handed to the kernel still trickles in.
    // The first look that finds it gone bounds the close from above (the last that found it open
    // bounded it from below, up to a poll early: 3.97 s for a close at 4.0 s).
    while ((await connections()).exports > 0 || performance.now() - started < 500) await sleep(50)
    const gone = (performance.now() - started) / 1000
    t.ok(gone >= MAX_SECONDS && gone < MAX_SECONDS + 3, `the export's connection closed after ${gone.toFixed(1)} s`)
    const got = await trickle
    t.notOk(got.complete, `the reader got ${got.bytes} bytes`)
    t.ok(got.bytes > 0 && got.bytes < full.body.length, 'not all of them')
    t.same(await settled(), { exports: 0, busy: 0 }, 'every connection closed')
  })
})
