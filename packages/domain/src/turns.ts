/**
 * Turns of the event loop for long work (a zone's bucket bounds, a large answer's JSON): work that
 * would hold the loop for tens of milliseconds runs in slices, and every other request's I/O is
 * read between them.
 *
 * The turns are handed out one per iteration of the loop, in the order they were asked for: with
 * a plain setImmediate, every request waiting for a turn would resume in the same check phase, and
 * four of them in slices of 8 ms would still hold the loop for 32.
 */
const waiting: Array<() => void> = []
let pumping = false

function pump (): void {
  waiting.shift()?.()
  // Scheduled from within the check phase, the next one runs in the next iteration, after its I/O.
  if (waiting.length > 0) setImmediate(pump)
  else pumping = false
}

/** A turn of the event loop: resolves once the I/O that arrived meanwhile has been read. */
export async function nextTurn (): Promise<void> {
  await new Promise<void>((resolve) => {
    waiting.push(resolve)
    if (!pumping) {
      pumping = true
      setImmediate(pump)
    }
  })
}

/**
 * The longest a loop holds the event loop between turns: a zone's bucket costs microseconds, but
 * the first use of each of its years about a millisecond.
 */
export const SLICE_MS = 8

/** A clock for a loop: `due()` says when SLICE_MS have passed since the last turn it gave. */
export function slicer (): { due: () => boolean, turn: () => Promise<void> } {
  let since = performance.now()
  return {
    due: () => performance.now() - since > SLICE_MS,
    turn: async () => { await nextTurn(); since = performance.now() }
  }
}
