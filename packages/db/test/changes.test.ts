import t from 'tap'
import postgres from 'postgres'
import { ChangeFeed, type ChangePayload, createDatabase, inTransaction, notifyChange } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'

interface Tap { teardown: (fn: () => unknown) => void, error: (err: unknown) => void }

/** Waits for a condition the feed brings about asynchronously; generous, never a timing assertion. */
async function until (what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms
  while (!ok()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** A feed in a process of its own (its own pool), as another replica would have. */
async function replica (t: Tap, url: string) {
  const database = createDatabase(url, { max: 2, applicationName: 'esp-test-feed' })
  const feed = new ChangeFeed(database, (err) => { t.error(err) })
  const seen: ChangePayload[] = []
  let resets = 0
  feed.subscribe('things', { change: (payload) => { seen.push(payload) }, reset: () => { resets++ } })
  t.teardown(async () => { await feed.close(); await database.close() })
  await feed.start()
  return { feed, seen, resets: () => resets }
}

t.test('a change reaches subscribers on commit, and nothing of a rollback', async (t) => {
  const database = await createTestDatabase(t)
  const other = await replica(t, database.url)
  t.equal(other.resets(), 1, 'the first LISTEN resets: anything cached before it is unverified')

  let committed = false
  await inTransaction(database, async ({ db }) => {
    await notifyChange(db, 'things', { id: 1 })
    await notifyChange(db, 'elsewhere', { id: 9 })
    // Not delivered while the transaction is open.
    await new Promise((resolve) => setTimeout(resolve, 200))
    t.same(other.seen, [], 'nothing before commit')
    committed = true
  })
  t.ok(committed)
  await until('the committed change', () => other.seen.length === 1)
  t.same(other.seen, [{ id: 1 }], 'only the subscribed topic')

  await t.rejects(inTransaction(database, async ({ db }) => {
    await notifyChange(db, 'things', { id: 2 })
    throw new Error('roll back')
  }))
  // A later commit proves the rolled back one would have arrived by now: notifications keep commit order.
  await notifyChange(database.db, 'things', { id: 3 })
  await until('the later change', () => other.seen.length >= 2)
  t.same(other.seen, [{ id: 1 }, { id: 3 }], 'the rolled back change never arrives')

  const big = 'x'.repeat(10_000)
  await notifyChange(database.db, 'things', { big })
  await until('the oversized change', () => other.seen.length >= 3)
  t.equal(other.seen[2], null, 'too big for NOTIFY: sent as "anything on the topic changed"')
})

t.test('every subscriber is reset after the listening connection was terminated', async (t) => {
  const database = await createTestDatabase(t)
  const other = await replica(t, database.url)
  t.equal(other.resets(), 1)
  const admin = postgres(database.url, { max: 1, onnotice: () => {} })
  t.teardown(async () => { await admin.end() })

  for (let round = 1; round <= 2; round++) {
    const killed = await admin<{ pid: number }[]>`
      select pg_terminate_backend(pid) as ok, pid from pg_stat_activity
      where datname = current_database() and query ilike 'listen %' and pid <> pg_backend_pid()`
    t.equal(killed.length, 1, 'the one listening connection')
    await until('the reset after reconnecting', () => other.resets() === round + 1)
    // Listening again: changes flow as before.
    const before = other.seen.length
    await notifyChange(database.db, 'things', { round })
    await until('a change after reconnecting', () => other.seen.length > before)
    t.same(other.seen.at(-1), { round })
  }
})
