import t from 'tap'
import { nextTurn, slicer, SLICE_MS } from '../src/turns.js'

const busy = (ms: number): void => { const end = performance.now() + ms; while (performance.now() < end) { /* holds the loop */ } }

t.test('requests waiting for a turn resume one per iteration of the loop, with I/O between them', async (t) => {
  const order: string[] = []
  // Each of three loops holds the event loop for 3 ms after its turn, then lets a timer fall due.
  const work = async (name: string): Promise<void> => {
    await nextTurn()
    order.push(name)
    setTimeout(() => { order.push(`timer after ${name}`) }, 1)
    busy(3)
  }
  await Promise.all([work('a'), work('b'), work('c')])
  await new Promise((resolve) => setTimeout(resolve, 10))
  // With every waiter resumed in one check phase, the timers would all come after c.
  t.same(order.slice(0, 5), ['a', 'timer after a', 'b', 'timer after b', 'c'])
})

t.test('a slicer is due once SLICE_MS have passed, and not again right after its turn', async (t) => {
  const slice = slicer()
  t.notOk(slice.due(), 'not due at first')
  busy(SLICE_MS + 1)
  t.ok(slice.due(), `due after ${SLICE_MS} ms`)
  await slice.turn()
  t.notOk(slice.due(), 'not due after a turn')
})
