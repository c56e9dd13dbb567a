import { type Generations, generationsReader, type Handle, poolOf } from '@esp/db'

/** Reads of one barrier in flight at once. */
const IN_FLIGHT = 2

interface Settle<T> { resolve: (value: T) => void, reject: (err: unknown) => void }

/**
 * Reads a generation for many requests at once, each answer from a query sent after the caller
 * asked: callers that arrive while reads are in flight wait for the next one. Two may be in
 * flight: with one, a caller arriving just after it was sent waited for it to come back and for
 * the next, a round trip and a half on average, which made a route answered from memory slower
 * than a bare one-row query. So under load a process sends about two reads per round trip, not
 * one per request.
 */
export class GenerationBarrier<T = number> {
  private waiting: { promise: Promise<T> } & Settle<T> | undefined
  private inFlight = 0
  /** the last answer, and when (performance.now()) the query that gave it was sent */
  private last: { value: T, sentAt: number } | undefined

  constructor (private readonly read: () => Promise<T>) {}

  /**
   * The value from a query sent after the caller asked, or, with `notBefore`, from one sent at or
   * after that moment (a request's arrival): a request reading two caches waits for one query.
   */
  async current (notBefore?: number): Promise<T> {
    if (notBefore !== undefined && this.last !== undefined && this.last.sentAt >= notBefore) return this.last.value
    if (this.waiting === undefined) {
      let settle!: Settle<T>
      const promise = new Promise<T>((resolve, reject) => { settle = { resolve, reject } })
      this.waiting = { promise, ...settle }
    }
    const { promise } = this.waiting
    if (this.inFlight < IN_FLIGHT) this.send()
    return await promise
  }

  private send (): void {
    const batch = this.waiting
    this.waiting = undefined
    if (batch === undefined) return
    this.inFlight++
    const sentAt = performance.now()
    this.read().then((value) => {
      if (this.last === undefined || sentAt >= this.last.sentAt) this.last = { value, sentAt }
      batch.resolve(value)
    }, batch.reject).finally(() => {
      this.inFlight--
      this.send()
    })
  }
}

const barriers = new WeakMap<object, GenerationBarrier<Generations>>()

/**
 * The generations of the credential cache and the reference data, read together by one barrier
 * per pool: a request with a token that reads the catalogue waits for one query, not two
 * (the second cache takes the first's answer, `current(notBefore)`). Any handle of the pool finds it.
 */
export function generations (h: Handle): GenerationBarrier<Generations> {
  const pool = poolOf(h)
  let barrier = barriers.get(pool)
  if (barrier === undefined) barriers.set(pool, barrier = new GenerationBarrier<Generations>(generationsReader(h)))
  return barrier
}
