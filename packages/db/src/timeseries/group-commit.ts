import type { Database } from '../client.js'
import { engineName, postgresRunner, type ReadingRow, type TimeSeriesEngine } from './engine.js'
import { nativeEngine } from './native.js'
import { timescaleEngine } from './timescale.js'
import { ensureComponents, KnownComponents, type WriteFrame, writeReadings, type WriteResult } from './writes.js'

const TRANSACTION: WriteFrame = { before: [{ text: 'begin' }], after: [{ text: 'commit' }] }

interface Pending {
  rows: ReadingRow[]
  resolve: (result: WriteResult) => void
  reject: (error: unknown) => void
}

export interface WriterOptions {
  /** rows one transaction may carry */
  maxRows?: number
  /** transactions in flight at once */
  concurrency?: number
}

/**
 * Group commit for readings: writes that arrive while a transaction is in flight wait (no timer)
 * and go together in the next one, so many small acknowledged-after-commit writes (HTTP batches,
 * MQTT messages, steps of a CSV import) share statements and one commit. Each caller still learns
 * exactly what of its own rows was stored; the first write of a (device, sensor, time) wins, in
 * arrival order. If a shared transaction fails, each write is retried alone, so one bad write
 * cannot fail its neighbours. The one batching layer of the ingest (domain storeMessages).
 */
export class ReadingsWriter {
  private readonly queue: Pending[] = []
  private inFlight = 0
  private readonly maxRows: number
  private readonly concurrency: number
  /** (device, sensor) pairs known to have a component: their insert is skipped */
  private readonly components = new KnownComponents()

  constructor (private readonly database: Database, private readonly engine: TimeSeriesEngine, options: WriterOptions = {}) {
    this.maxRows = options.maxRows ?? 20_000
    this.concurrency = options.concurrency ?? 2
  }

  async write (rows: ReadingRow[]): Promise<WriteResult> {
    const [result] = await this.writeAll([rows])
    return result ?? { stored: 0, duplicates: 0, inserted: [] }
  }

  /**
   * Several callers' writes queued at once (a batch of messages), so they share a transaction;
   * each gets its own result, in order.
   */
  async writeAll (writes: ReadingRow[][]): Promise<WriteResult[]> {
    const results = writes.map(async (rows) => rows.length === 0
      ? { stored: 0, duplicates: 0, inserted: [] }
      : await new Promise<WriteResult>((resolve, reject) => { this.queue.push({ rows, resolve, reject }) }))
    this.pump()
    return await Promise.all(results)
  }

  private pump (): void {
    while (this.inFlight < this.concurrency && this.queue.length > 0) {
      // One splice per group: shifting a backlog of thousands of MQTT messages one by one was quadratic.
      let count = 1
      let size = this.queue[0]?.rows.length ?? 0
      while (count < this.queue.length && size + (this.queue[count]?.rows.length ?? 0) <= this.maxRows) size += this.queue[count++]?.rows.length ?? 0
      const group = this.queue.splice(0, count)
      this.inFlight++
      void this.flush(group).finally(() => {
        this.inFlight--
        this.pump()
      })
    }
  }

  private async commit (rows: ReadingRow[]): Promise<WriteResult> {
    // Partitions and components, each committed on its own before the write transaction needs them.
    const pool = postgresRunner(this.database.sql)
    await Promise.all([this.engine.prepare(pool, rows.map((r) => r.recordedAt)), ensureComponents(pool, rows, this.components)])
    // The transaction's BEGIN and COMMIT ride with the write's first and last round trips, on a
    // connection of its own: under load every round trip waited for a core, and there were ten.
    const connection = await this.database.sql.reserve()
    try {
      return await writeReadings(postgresRunner(connection), this.engine, rows, this.components, TRANSACTION)
    } catch (err) {
      // Whatever was sent runs first, in order; a transaction left open is rolled back before the connection goes back.
      await connection.unsafe('rollback').catch(() => {})
      throw err
    } finally {
      connection.release()
    }
  }

  private async flush (group: Pending[]): Promise<void> {
    if (group.length === 1 && group[0] !== undefined) {
      const only = group[0]
      await this.commit(only.rows).then(only.resolve, only.reject)
      return
    }
    // In arrival order: where writes repeat a (device, sensor, time), the write path keeps the first.
    const rows = group.flatMap((pending) => pending.rows)
    let result: WriteResult
    try {
      result = await this.commit(rows)
    } catch {
      for (const pending of group) await this.commit(pending.rows).then(pending.resolve, pending.reject)
      return
    }
    // Each caller's share, by identity of its row objects: nothing is keyed by value.
    const stored = result.inserted.length === rows.length ? undefined : new Set(result.inserted)
    for (const pending of group) {
      const inserted = stored === undefined ? pending.rows : pending.rows.filter((row) => stored.has(row))
      pending.resolve({ stored: inserted.length, duplicates: pending.rows.length - inserted.length, inserted })
    }
  }
}

/**
 * A writer on the engine the database was migrated with. `ahead`: times whose partitions are
 * made now (native engine), so that no device waits for the coming months' tables.
 */
export async function openReadingsWriter (database: Database, ahead: Iterable<Date> = [], options: WriterOptions = {}): Promise<ReadingsWriter> {
  const runner = postgresRunner(database.sql)
  const engine = (await engineName(runner)) === 'timescale' ? timescaleEngine() : nativeEngine()
  await engine.prepare(runner, ahead)
  return new ReadingsWriter(database, engine, options)
}
