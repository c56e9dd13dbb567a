import { type AddressInfo, connect, createServer, type Socket } from 'node:net'
import t from 'tap'
import postgres from 'postgres'
import { copyOut } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'

// postgres.js is patched (patches/postgres@3.4.9.patch) to hand a COPY TO STDOUT's rows to the
// stream a socket chunk at a time. These check the bytes against the rows, rows short and long
// enough to take both of the patch's copy paths, and that the connection is usable afterwards.

const ROWS = 20_000
const rowText = (g: number): string => `${g}\t${'x'.repeat(g % 150)}\n`
const expected = Array.from({ length: ROWS }, (_, i) => rowText(i + 1)).join('')
const COPY_ROWS = `copy (select g, repeat('x', g % 150) from generate_series(1, ${ROWS}) g) to stdout`

async function readAll (stream: AsyncIterable<Uint8Array>): Promise<{ text: string, chunks: number }> {
  const parts: Buffer[] = []
  for await (const chunk of stream) parts.push(Buffer.from(chunk))
  return { text: Buffer.concat(parts).toString('utf8'), chunks: parts.length }
}

t.test('copyOut: every byte of every row, in socket-sized chunks', async (t) => {
  const { url } = await createTestDatabase(t)
  const copy = await copyOut(url, COPY_ROWS)
  const { text, chunks } = await readAll(copy.stream)
  await copy.closed
  t.equal(text.length, expected.length)
  t.ok(text === expected, 'the rows, unchanged and in order')
  t.ok(chunks < ROWS / 20, `${chunks} chunks for ${ROWS} rows: not one a row`)
})

t.test('the same connection: a COPY out, an error half-way, a COPY in, then plain queries', async (t) => {
  const { url } = await createTestDatabase(t)
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end({ timeout: 5 }) })

  // The last rows and the CopyDone often share a socket chunk: before the patch took in the fix
  // of porsager/postgres#499, the query after such a COPY hung for ever.
  for (let i = 0; i < 5; i++) {
    const out = await readAll(await sql.unsafe(COPY_ROWS).readable())
    t.ok(out.text === expected, `COPY out on a pooled connection (${i + 1})`)
    t.same(await sql`select ${i} as i`, [{ i }], 'the connection answers after it')
  }

  // A division by zero at row 15 000: the stream fails, rows before it have arrived.
  const failing = await sql.unsafe(`copy (select g, 1 / (g - 15000) from generate_series(1, ${ROWS}) g) to stdout`).readable()
  let received = 0
  const error = await (async () => {
    try {
      for await (const chunk of failing) received += (chunk as Buffer).length
    } catch (err) {
      return err as Error & { code?: string }
    }
    return undefined
  })()
  t.equal(error?.code, '22012', 'the error reaches the reader')
  t.ok(received > 0, 'rows before it were streamed')
  t.same(await sql`select 2 as two`, [{ two: 2 }], 'the connection answers after a failed COPY')

  await sql`create temporary table copied (g int, x text)`
  const writable = await sql`copy copied from stdin`.writable()
  await new Promise<void>((resolve, reject) => {
    writable.on('error', reject)
    writable.on('finish', resolve)
    writable.end(expected)
  })
  const [copied] = await sql<{ n: number, total: string }[]>`select count(*)::int as n, sum(length(x))::text as total from copied`
  t.same(copied, { n: ROWS, total: String(Array.from({ length: ROWS }, (_, i) => (i + 1) % 150).reduce((a, b) => a + b, 0)) }, 'COPY in still works')
  const again = await readAll(await sql.unsafe('copy (select g, x from copied order by g) to stdout').readable())
  t.ok(again.text === expected, 'and COPY out of what it wrote')
})

t.test('a COPY FROM STDIN the server rejects after the last byte settles with its error, and the transaction rolls back (porsager/postgres#1173)', async (t) => {
  const database = await createTestDatabase(t)
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end() })
  await sql`create table copied_once (g int primary key)`
  const copy = async (tx: postgres.TransactionSql, from: number, to: number): Promise<void> => {
    const writable = await tx`copy copied_once from stdin`.writable()
    await new Promise<void>((resolve, reject) => {
      writable.on('error', reject)
      writable.on('finish', resolve)
      writable.end(Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join(''))
    })
  }
  await sql.begin(async (tx) => { await copy(tx, 1, 1000) })
  // Before the patch this await never settled, and the connection stayed idle in an aborted transaction.
  await t.rejects(sql.begin(async (tx) => {
    await tx`insert into copied_once values (5000)`
    await copy(tx, 900, 1100)
  }), { code: '23505' })
  const [state] = await sql<{ n: number, max: number }[]>`select count(*)::int as n, max(g) as max from copied_once`
  t.same(state, { n: 1000, max: 1000 }, 'nothing of the failed transaction stayed')
  await sql.begin(async (tx) => {
    await tx`savepoint s`
    await t.rejects(copy(tx, 1000, 1001), { code: '23505' })
    await tx`rollback to savepoint s`
    await copy(tx, 1001, 1002)
  })
  const [after] = await sql<{ n: number }[]>`select count(*)::int as n from copied_once`
  t.equal(after?.n, 1002, 'a savepoint survives the failed COPY, and the same connection copies again')
})

/**
 * A proxy between postgres.js and the server that hands the server's bytes on in the pieces
 * `cut` chooses, each in a read of its own: COPY's messages then end at every offset of a read,
 * as they do by chance on a busy machine.
 */
async function rechunkingProxy (t: { teardown: (fn: () => unknown) => void }, url: string, cut: () => number): Promise<string> {
  const target = new URL(url)
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname)
    sockets.add(client).add(upstream)
    client.setNoDelay(true)
    client.pipe(upstream)
    let queue = Promise.resolve()
    upstream.on('data', (data: Buffer) => {
      upstream.pause()
      queue = queue.then(async () => {
        for (let at = 0; at < data.length;) {
          const end = Math.min(data.length, at + cut())
          await new Promise<void>((resolve) => { client.write(data.subarray(at, end), () => { setImmediate(resolve) }) })
          at = end
        }
        upstream.resume()
      })
    })
    upstream.on('end', () => { void queue.then(() => client.end()) })
    for (const s of [client, upstream]) s.on('error', () => { client.destroy(); upstream.destroy() })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((resolve) => server.close(resolve))
  })
  const proxied = new URL(url)
  proxied.port = String((server.address() as AddressInfo).port)
  return proxied.toString()
}

t.test('copyOut: rows cut at every offset of a read, long rows among them, arrive whole and in order', async (t) => {
  const { url } = await createTestDatabase(t)
  // Short rows of every length and, every 250th, one longer than a socket read.
  const text = (g: number): string => `${g}\t${'y'.repeat(g % 250 === 0 ? 70_000 + g : g % 40)}\n`
  const copyText = (rows: number): string => `copy (select g, repeat('y', case when g % 250 = 0 then 70000 + g else g % 40 end) from generate_series(1, ${rows}) g) to stdout`
  const want = (rows: number): string => Array.from({ length: rows }, (_, i) => text(i + 1)).join('')
  const random = (() => { let s = 42; return (): number => { s = (s * 1_103_515_245 + 12_345) % 2 ** 31; return s } })()
  const cases = [['1 to 9 bytes', 249, () => 1 + random() % 9], ['1 to 300 bytes', 1_000, () => 1 + random() % 300], ['1 to 90 000 bytes', 3_000, () => 1 + random() % 90_000]] as const
  for (const [name, rows, cut] of cases) {
    const copy = await copyOut(await rechunkingProxy(t, url, cut), copyText(rows))
    const out = await readAll(copy.stream)
    await copy.closed
    t.ok(out.text === want(rows), `${rows} rows in pieces of ${name}: every row, unchanged`)
  }
  const sql = postgres(await rechunkingProxy(t, url, () => 1 + random() % 7), { max: 1, onnotice: () => {} })
  t.teardown(async () => { await sql.end({ timeout: 5 }) })
  const out = await readAll(await sql.unsafe(copyText(500)).readable())
  t.ok(out.text === want(500), 'a pooled connection, pieces of 1 to 7 bytes, two long rows among them')
  t.same(await sql`select 1 as one`, [{ one: 1 }], 'and it answers the next query')
})
