import { type Database, postgresRunner, type ReadingRow, readingKey, type TimeSeriesEngine, writeReadings, type WriteResult } from '@esp/db'

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
 * MQTT messages) share statements and one commit. Each caller still learns exactly what of its own
 * rows was stored; the first write of a (device, sensor, time) wins, in arrival order. If a shared
 * transaction fails, each write is retried alone, so one bad write cannot fail its neighbours.
 */
export class ReadingsWriter {
  private readonly queue: Pending[] = []
  private inFlight = 0
  private readonly maxRows: number
  private readonly concurrency: number
  /** (device, sensor) pairs known to have a component: their insert is skipped */
  private readonly components = new Set<string>()

  constructor (private readonly database: Database, private readonly engine: TimeSeriesEngine, options: WriterOptions = {}) {
    this.maxRows = options.maxRows ?? 20_000
    this.concurrency = options.concurrency ?? 2
  }

  async write (rows: ReadingRow[]): Promise<WriteResult> {
    const [result] = await this.writeAll([rows])
    return result ?? { stored: 0, duplicates: 0, inserted: [] }
  }

  /**
   * Several callers' writes queued at once (a batch of MQTT messages), so they share a
   * transaction; each gets its own result, in order.
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
      const group: Pending[] = []
      let size = 0
      while (this.queue.length > 0 && (group.length === 0 || size + (this.queue[0]?.rows.length ?? 0) <= this.maxRows)) {
        const next = this.queue.shift()
        if (next === undefined) break
        group.push(next)
        size += next.rows.length
      }
      this.inFlight++
      void this.flush(group).finally(() => {
        this.inFlight--
        this.pump()
      })
    }
  }

  private async commit (rows: ReadingRow[]): Promise<WriteResult> {
    await this.engine.prepare(postgresRunner(this.database.sql), rows.map((r) => r.recordedAt))
    // A bare transaction: the write path is raw SQL, and a Drizzle instance per commit showed in profiles.
    return await this.database.sql.begin(async (tx) => await writeReadings(postgresRunner(tx), this.engine, rows, this.components)) as WriteResult
  }

  private async flush (group: Pending[]): Promise<void> {
    if (group.length === 1 && group[0] !== undefined) {
      const only = group[0]
      await this.commit(only.rows).then(only.resolve, only.reject)
      return
    }
    const { rows, ownerOf } = groupRows(group.map((pending) => pending.rows))
    let result: WriteResult
    try {
      result = await this.commit(rows)
    } catch {
      for (const pending of group) await this.commit(pending.rows).then(pending.resolve, pending.reject)
      return
    }
    const mine = group.map((): ReadingRow[] => [])
    for (const row of result.inserted) mine[ownerOf(row)]?.push(row)
    group.forEach((pending, index) => {
      const inserted = mine[index] ?? []
      pending.resolve({ stored: inserted.length, duplicates: pending.rows.length - inserted.length, inserted })
    })
  }
}

/**
 * The rows of several writes as one, and which write each row belongs to. Across writes the
 * earlier one owns a (device, sensor, time); later copies are its duplicates. Writes usually come
 * from different devices (one HTTP batch or MQTT message each), and then no row can repeat
 * another write's: rows are neither keyed nor filtered, and a row's device names its write.
 */
export function groupRows (writes: ReadingRow[][]): { rows: ReadingRow[], ownerOf: (row: ReadingRow) => number } {
  const writeOfDevice = new Map<number, number>()
  let shared = false
  writes.forEach((rows, index) => {
    let previous: number | undefined
    for (const row of rows) {
      if (row.deviceId === previous) continue
      previous = row.deviceId
      const owner = writeOfDevice.get(row.deviceId)
      if (owner === undefined) writeOfDevice.set(row.deviceId, index)
      else if (owner !== index) shared = true
    }
  })
  if (!shared) return { rows: writes.flat(), ownerOf: (row) => writeOfDevice.get(row.deviceId) ?? 0 }
  const owner = new Map<string, number>()
  const rows: ReadingRow[] = []
  writes.forEach((written, index) => {
    for (const row of written) {
      const key = readingKey(row)
      if (owner.has(key)) continue
      owner.set(key, index)
      rows.push(row)
    }
  })
  return { rows, ownerOf: (row) => owner.get(readingKey(row)) ?? 0 }
}
