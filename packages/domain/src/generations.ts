import { type Generations, generationsReader, type Handle, poolOf } from '@esp/db'

/** Reads of one barrier in flight at once. */
const IN_FLIGHT = 2

interface Settle<T> { resolve: (value: T) => void, reject: (err: unknown) => void }

/**
 * One read for many callers at once, each answer from a read sent after the caller asked: callers
 * that arrive while reads are in flight wait for the next one, which reads every key they asked
 * for. Two may be in flight: with one, a caller arriving just after it was sent waited for it to
 * come back and for the next, a round trip and a half on average. So under load a process sends
 * about two reads per round trip, not one per request, and a request still never takes an answer
 * read before it arrived (DESIGN.md, Read).
 */
export class Barrier<K, R> {
  private waiting: { keys: K[], promise: Promise<R> } & Settle<R> | undefined
  private inFlight = 0
  /** the last answer, and when (performance.now()) the read that gave it was sent */
  protected last: { value: R, sentAt: number } | undefined

  constructor (private readonly read: (keys: K[]) => Promise<R>) {}

  /** The answer of a read sent after the caller asked, among whose keys is `key`. */
  async after (key: K): Promise<R> {
    if (this.waiting === undefined) {
      let settle!: Settle<R>
      const promise = new Promise<R>((resolve, reject) => { settle = { resolve, reject } })
      this.waiting = { keys: [], promise, ...settle }
    }
    this.waiting.keys.push(key)
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
    this.read(batch.keys).then((value) => {
      if (this.last === undefined || sentAt >= this.last.sentAt) this.last = { value, sentAt }
      batch.resolve(value)
    }, batch.reject).finally(() => {
      this.inFlight--
      this.send()
    })
  }
}

/** A Barrier of one value (generations): every caller asks for the same thing. */
export class GenerationBarrier<T = number> extends Barrier<undefined, T> {
  constructor (read: () => Promise<T>) {
    super(async () => await read())
  }

  /**
   * The value from a query sent after the caller asked, or, with `notBefore`, from one sent at or
   * after that moment (a request's arrival): a request reading two caches waits for one query.
   */
  async current (notBefore?: number): Promise<T> {
    if (notBefore !== undefined && this.last !== undefined && this.last.sentAt >= notBefore) return this.last.value
    return await this.after(undefined)
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
