import { connect, type Socket } from 'node:net'
import t from 'tap'
import postgres from 'postgres'
import { createTestDatabase } from '@esp/db/testing'

// postgres.js is patched (patches/postgres@3.4.9.patch) so that a connection the server or the
// network drops never takes the process down or poisons the pool (porsager/postgres #1208, #1154,
// #1066). Each case reproduced a crash or a hang before the patch: an uncaught TypeError in
// nextWrite ends a tap test file at once, and a hang runs into the timeouts below.

const within = async <T>(ms: number, what: string, work: Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what}: no answer within ${ms} ms`)) }, ms) })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

const errorCode = async (work: Promise<unknown>): Promise<string> => await work.then(() => 'resolved', (err: unknown) => String((err as { code?: unknown }).code ?? (err as Error).message))

/** A pool whose sockets the test can cut, as a network or a server crash would. */
function cuttablePool (url: string, max: number): { sql: postgres.Sql, sockets: Socket[] } {
  const { hostname, port } = new URL(url)
  const sockets: Socket[] = []
  // `socket` is a documented option that the driver's types leave out.
  const options = {
    max,
    onnotice: () => {},
    backoff: () => 0.01,
    socket: () => {
      const socket = connect(Number(port), hostname)
      sockets.push(socket)
      return socket
    }
  } as postgres.Options<Record<string, never>>
  const sql = postgres(url, options)
  return { sql, sockets }
}

t.test('a reserved connection whose backend is terminated rejects its queries and gives way', async (t) => {
  const { url } = await createTestDatabase(t)
  const sql = postgres(url, { max: 2, onnotice: () => {}, backoff: () => 0.01 })
  const killer = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]) })

  const reserved = await sql.reserve()
  const [row] = await reserved<{ pid: number }[]>`select pg_backend_pid() as pid`
  await killer`select pg_terminate_backend(${row?.pid ?? 0})`
  const first = await within(3000, 'the first query after the kill', errorCode(reserved`select 1`))
  t.not(first, 'resolved', `the first query fails (${first})`)
  // Before the patch, this one threw from a setImmediate: an uncaught TypeError.
  const second = await within(3000, 'the second query after the kill', errorCode(reserved`select 1`))
  // Which error depends on how far the close had come (the server's 57P01, a reset, or the
  // reservation already known to be lost); that it is a rejection does not.
  t.not(second, 'resolved', `a later query on the dead reservation is rejected, catchably (${second})`)
  const rollback = await within(3000, 'a rollback on the dead reservation', errorCode(reserved.unsafe('rollback')))
  t.not(rollback, 'resolved', `so is a rollback (${rollback})`)
  reserved.release()
  // The released reservation must not hand the pool a connection without a socket.
  for (let i = 0; i < 6; i++) {
    const [one] = await within(3000, `pooled query ${i}`, sql<{ one: number }[]>`select 1 as one`)
    t.equal(one?.one, 1)
  }
})

t.test('a reserved connection cut by the network while idle', async (t) => {
  const { url } = await createTestDatabase(t)
  const { sql, sockets } = cuttablePool(url, 1)
  t.teardown(async () => { await sql.end({ timeout: 1 }) })
  const reserved = await sql.reserve()
  await reserved`select 1`
  sockets.at(-1)?.destroy()
  await new Promise((resolve) => setImmediate(resolve))
  const code = await within(3000, 'a query on the cut reservation', errorCode(reserved`select 1`))
  t.equal(code, 'CONNECTION_CLOSED')
  reserved.release()
  const [one] = await within(3000, 'the pool after the cut reservation', sql<{ one: number }[]>`select 1 as one`)
  t.equal(one?.one, 1, 'the single connection of the pool reconnects')
})

t.test('a socket cut while a small write waits for its turn does not poison the connection', async (t) => {
  const { url } = await createTestDatabase(t)
  const { sql, sockets } = cuttablePool(url, 1)
  t.teardown(async () => { await sql.end({ timeout: 1 }) })
  await sql`select 1`
  for (let round = 0; round < 3; round++) {
    // A small query is buffered for a setImmediate; the socket closes (on the next tick) first.
    const pending = sql`select 1`.execute()
    sockets.at(-1)?.destroy()
    const code = await within(3000, `the query cut in round ${round}`, errorCode(pending))
    t.not(code, 'resolved', `round ${round}: the cut query fails (${code})`)
    // Before the patch the timer was cleared but not forgotten: the reconnect's startup message
    // then never left, and every later query on this connection hung.
    const [one] = await within(3000, `the query after round ${round}`, sql<{ one: number }[]>`select 1 as one`)
    t.equal(one?.one, 1, `round ${round}: the connection serves again`)
  }
})

t.test('a transaction whose connection dies: its later queries are rejected, the pool goes on', async (t) => {
  const { url } = await createTestDatabase(t)
  const sql = postgres(url, { max: 1, onnotice: () => {}, backoff: () => 0.01 })
  const killer = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]) })
  const outcome = await within(5000, 'the transaction', errorCode(sql.begin(async (tx) => {
    const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`
    await killer`select pg_terminate_backend(${row?.pid ?? 0})`
    await tx`select 1`.catch(() => undefined)
    // The scope goes on after its connection is gone, as application code does in a catch.
    await tx`select 2`.catch(() => undefined)
    await tx`select 3`
  })))
  t.not(outcome, 'resolved', `the transaction fails (${outcome})`)
  for (let i = 0; i < 4; i++) {
    const [one] = await within(3000, `pooled query ${i} after the transaction`, sql<{ one: number }[]>`select 1 as one`)
    t.equal(one?.one, 1)
  }
})

t.test('many reservations and transactions cut under load: every query settles, the pool recovers', async (t) => {
  const { url } = await createTestDatabase(t)
  const sql = postgres(url, { max: 6, onnotice: () => {}, backoff: () => 0.01, connection: { application_name: 'cut-under-load' } })
  const killer = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await Promise.all([sql.end({ timeout: 1 }), killer.end({ timeout: 1 })]) })
  const state = { running: true }
  let settled = 0
  const worker = async (i: number): Promise<void> => {
    while (state.running) {
      const work = i % 2 === 0
        ? (async () => {
            const reserved = await sql.reserve()
            try {
              await reserved`select pg_sleep(0.001)`
              await reserved`select ${'x'.repeat(i * 300)}::text`
            } catch (err) {
              await reserved.unsafe('rollback').catch(() => undefined)
              throw err
            } finally {
              reserved.release()
            }
          })()
        : sql.begin(async (tx) => { await tx`select pg_sleep(0.001)`; await tx`select ${'y'.repeat(i * 300)}::text` })
      await within(10_000, `worker ${i}`, work.catch(() => undefined))
      settled++
    }
  }
  const workers = Array.from({ length: 10 }, async (_, i) => { await worker(i) })
  for (let round = 0; round < 24; round++) {
    await new Promise((resolve) => setTimeout(resolve, 40))
    await killer`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'cut-under-load'`
  }
  state.running = false
  await Promise.all(workers)
  t.ok(settled > 0, `${settled} units of work settled`)
  const [one] = await within(5000, 'a query after the storm', sql<{ one: number }[]>`select 1 as one`)
  t.equal(one?.one, 1, 'the pool serves after its connections were cut over and over')
  const all = await within(5000, 'as many queries as the pool has connections', Promise.all(Array.from({ length: 12 }, async () => await sql`select 1`)))
  t.equal(all.length, 12, 'every connection of the pool answers: none was lost to a dead reservation')
  await within(5000, 'ending the pool', sql.end())
  t.pass('the pool ends: no connection waits for an answer that never comes')
})
