import { Readable } from 'node:stream'
import postgres from 'postgres'

export interface CopyOut {
  /** the bytes PostgreSQL writes; destroying it (a client gone) cancels the COPY */
  stream: Readable
  /** settles once the connection is closed, whatever the outcome */
  closed: Promise<void>
}

const noop = (): void => {}

/**
 * Runs `COPY (...) TO STDOUT` on a connection of its own and streams the bytes with backpressure.
 *
 * Not on the shared pool: a stream abandoned half-way (`destroy`) cancels the query, and a late
 * cancel request must not hit somebody else's query on a reused connection. Its stream's `_read`
 * is the connection's `socket.resume()`, so calling it while closing drains what is still in
 * flight, and the server never blocks writing to a socket nobody reads. postgres.js is patched
 * (patches/postgres@3.4.9.patch) to hand the rows over a socket chunk at a time, not one push a
 * row, and to resume the socket after a COPY (porsager/postgres#499).
 *
 * The session is in UTC (the statements format times with it) and without parallel workers: a
 * COPY is one ordered stream, and a Gather Merge of workers formatting rows cost more than it
 * gave (measured slower on 2 cores) while taking cores from every other request. `workMem` sizes
 * the memory a statement's sorts take before they spill to disk.
 */
export async function copyOut (url: string, text: string, options: { applicationName?: string, workMem?: string } = {}): Promise<CopyOut> {
  const settings = { application_name: options.applicationName ?? 'esp-copy', TimeZone: 'UTC', max_parallel_workers_per_gather: '0', ...(options.workMem === undefined ? {} : { work_mem: options.workMem }) }
  const client = postgres(url, { max: 1, onnotice: noop, connection: settings })
  let rows: Readable
  let query: ReturnType<typeof client.unsafe>
  try {
    query = client.unsafe(text)
    rows = await query.readable()
  } catch (err) {
    await client.end({ timeout: 5 })
    throw err
  }
  const resumeSocket = (): void => { (rows as unknown as { _read: () => void })._read() }
  let closing: Promise<void> | undefined
  const close = async (): Promise<void> => {
    closing ??= (async () => {
      rows.on('error', noop)
      // Ended means PostgreSQL's CopyDone arrived (the end may not have been read yet): nothing to cancel.
      if (!(rows as unknown as { _readableState: { ended: boolean } })._readableState.ended) {
        query.cancel()
        rows.on('data', noop)
      }
      resumeSocket()
      await client.end({ timeout: 5 })
    })()
    return await closing
  }
  const iterator = rows.iterator({ destroyOnReturn: false })
  const stream = Readable.from((async function * () {
    try {
      for await (const chunk of iterator) yield chunk as Buffer
    } finally {
      await close()
    }
  })(), { objectMode: false })
  let settle: () => void = noop
  const closed = new Promise<void>((resolve) => { settle = resolve })
  stream.once('close', () => { void close().then(settle, settle) })
  return { stream, closed }
}
