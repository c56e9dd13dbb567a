import t from 'tap'
import { createDatabase } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ReferenceData } from '@esp/domain'

// The reference data one process keeps (issue 20): what it answers is never older than a write
// that returned, and the requests waiting for a newer generation share one load.

t.test('the reference data follows every committed write, loading once for all the requests that wait', async (t) => {
  const test = await createTestDatabase(t)
  const database = createDatabase(test.url, { max: 4, applicationName: 'esp-test-reference' })
  t.teardown(async () => { await database.close() })
  const data = new ReferenceData(database)
  const [sensor] = await database.sql<Array<{ id: number, name: string }>>`select id, name from sensors order by id limit 1`
  if (sensor === undefined) throw new Error('the test database has no catalogue')

  const first = await data.fresh()
  t.equal(data.loads, 1, 'the first request loads it')
  t.equal(first.sensorView(sensor.id)?.name, sensor.name)
  t.equal(await data.fresh(), first, 'unchanged, the next request gets the same copy')
  t.equal(data.loads, 1, 'without loading again')
  t.equal(first.sensorView(sensor.id), first.sensorView(sensor.id), 'a representation is made once per copy')

  for (let round = 1; round <= 5; round++) {
    await database.sql`update sensors set name = ${`renamed ${round}`} where id = ${sensor.id}`
    const loadsBefore = data.loads
    const answers = await Promise.all(Array.from({ length: 20 }, async () => await data.fresh()))
    for (const answer of answers) t.equal(answer.sensorView(sensor.id)?.name, `renamed ${round}`, `round ${round}: every waiting request sees the write`)
    t.equal(new Set(answers).size, 1, `round ${round}: they share one copy`)
    t.equal(data.loads, loadsBefore + 1, `round ${round}: loaded once for all twenty`)
  }

  const current = await data.fresh()
  // A generation other than the kept one (a request that read it just before a write, or a
  // database restored to an older generation): one load, which answers what the database has.
  const loadsBefore = data.loads
  t.equal((await data.atLeast(current.generation - 1)).generation, current.generation, 'an older generation gets what the database has now')
  t.equal(data.loads, loadsBefore + 1, 'from one load')
  await database.sql`update catalogue_generation set value = value - 3`
  const restored = await data.fresh()
  t.equal(restored.generation, current.generation - 3, 'a generation gone back (a restore) replaces what is kept')
  // A change notice for a write this process has already loaded asks for one load at most, not
  // a loop waiting for a generation nobody wrote.
  const loads = data.loads
  const beyond = await data.atLeast(restored.generation + 1)
  t.equal(beyond.generation, restored.generation, 'a generation nobody wrote yet: one load, which answers what there is')
  t.equal(data.loads, loads + 1)
})

t.test('a device sensor sorts by name then id as PostgreSQL sorts them', async (t) => {
  const test = await createTestDatabase(t)
  const database = createDatabase(test.url, { max: 2, applicationName: 'esp-test-reference' })
  t.teardown(async () => { await database.close() })
  const catalogue = await new ReferenceData(database).fresh()
  const ordered = await database.sql<Array<{ id: number }>>`select id from sensors order by name, id`
  const ranked = [...catalogue.sensors.keys()].sort((a, b) => catalogue.rankOf(a) - catalogue.rankOf(b))
  t.same(ranked, ordered.map((row) => row.id))
})
