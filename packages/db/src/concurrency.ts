/** At most `limit` pieces of work at once; the others wait their turn, in order. */
export interface ConcurrencyLimit {
  run: <T>(work: () => Promise<T>) => Promise<T>
  /** how many run now */
  running: () => number
}

export function concurrencyLimit (limit: number): ConcurrencyLimit {
  let running = 0
  const waiting: Array<() => void> = []
  return {
    run: async <T>(work: () => Promise<T>): Promise<T> => {
      // A finished run hands its slot to the next waiter directly, so no newcomer slips in between.
      if (running < limit) running++
      else await new Promise<void>((resolve) => { waiting.push(resolve) })
      try {
        return await work()
      } finally {
        const next = waiting.shift()
        if (next !== undefined) next()
        else running--
      }
    },
    running: () => running
  }
}
