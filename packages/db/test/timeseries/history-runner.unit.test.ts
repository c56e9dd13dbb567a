import t from 'tap'
import { boundedRunner, type Runner } from '../../src/timeseries/index.js'

/** A runner whose statements end when told to, counting how many run at once. */
function fakeRunner (): { runner: Runner, running: () => number, most: () => number, finish: (error?: Error) => void } {
  let running = 0
  let most = 0
  const open: Array<{ resolve: () => void, reject: (error: Error) => void }> = []
  const statement = async <T>(): Promise<T[]> => {
    running++
    most = Math.max(most, running)
    try {
      await new Promise<void>((resolve, reject) => { open.push({ resolve, reject }) })
      return []
    } finally {
      running--
    }
  }
  return {
    runner: { query: statement, copyOutBinary: async () => { await statement(); return [] } },
    running: () => running,
    most: () => most,
    finish: (error) => { const next = open.shift(); if (error === undefined) next?.resolve(); else next?.reject(error) }
  }
}

const settle = async (): Promise<void> => { for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve)) }

t.test('at most `limit` statements run at once; the others wait their turn, failures included', async (t) => {
  const fake = fakeRunner()
  const bounded = boundedRunner(fake.runner, 2)
  const results = [
    bounded.query('a'), bounded.query('b'), bounded.query('c'),
    (bounded.pipeline as NonNullable<Runner['pipeline']>)([{ text: 'd' }, { text: 'e' }]),
    bounded.copyOutBinary('f')
  ]
  const all = Promise.allSettled(results)
  await settle()
  t.equal(fake.running(), 2, 'two run')
  fake.finish(new Error('a failed'))
  await settle()
  t.equal(fake.running(), 2, 'a failure hands its turn on')
  for (let i = 0; i < 5; i++) { fake.finish(); await settle() }
  const settled = await all
  t.same(settled.map((s) => s.status), ['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'])
  t.equal(fake.most(), 2, 'never more than two at once')
  t.equal(fake.running(), 0)
  // Free again: a statement now runs at once.
  const later = bounded.query('g')
  await settle()
  t.equal(fake.running(), 1, 'a slot is free once all are done')
  fake.finish()
  await later
})
