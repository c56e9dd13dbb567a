import { type Generations, generationsReader, type Sql } from '@esp/db'
import { oncePer } from './once-per.js'

interface Settle<T> { resolve: (value: T) => void, reject: (err: unknown) => void }

/**
 * Reads a generation for many requests at once, each answer from a query sent after the caller
 * asked: callers that arrive while one is in flight wait for the next one. So under load a
 * process sends about one read per round trip, not one per request.
 */
export class GenerationBarrier<T = number> {
  private waiting: { promise: Promise<T> } & Settle<T> | undefined
  private running = false

  constructor (private readonly read: () => Promise<T>) {}

  async current (): Promise<T> {
    if (this.waiting === undefined) {
      let settle!: Settle<T>
      const promise = new Promise<T>((resolve, reject) => { settle = { resolve, reject } })
      this.waiting = { promise, ...settle }
    }
    const { promise } = this.waiting
    if (!this.running) this.send()
    return await promise
  }

  private send (): void {
    const batch = this.waiting
    this.waiting = undefined
    if (batch === undefined) return
    this.running = true
    this.read().then(batch.resolve, batch.reject).finally(() => {
      this.running = false
      this.send()
    })
  }
}

/**
 * The generations of the credential cache and the reference data, read together by one barrier
 * per pool: a request with a token that reads the catalogue waits for one query, not two.
 */
export const generations = oncePer((sql: Sql) => new GenerationBarrier<Generations>(generationsReader({ sql })))
