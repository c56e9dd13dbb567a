import t from 'tap'
import { expectedMigrationCount, migrationStatus, seedCatalogue } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { defaultKitId, kits, measurements, sensors } from '../src/seed/catalogue-data.js'

t.test('the template is fully migrated', async (t) => {
  const { sql } = await createTestDatabase(t)
  const status = await migrationStatus({ sql })
  t.equal(status.applied, status.expected)
  t.equal(status.expected, expectedMigrationCount())
})

t.test('the real catalogue is seeded with its platform ids', async (t) => {
  const { sql } = await createTestDatabase(t)
  const [counts] = await sql<{ m: number, s: number, k: number, ks: number }[]>`
    select (select count(*) from measurements) as m, (select count(*) from sensors) as s,
           (select count(*) from kits) as k, (select count(*) from kit_sensors) as ks`
  t.same(counts, { m: measurements.length, s: sensors.length, k: kits.length, ks: kits.reduce((n, k) => n + k.sensors.length, 0) })
  const [first] = await sql`select id, name from sensors order by id limit 1`
  t.same(first, { id: 3, name: 'DHT22' }, 'the first sensor is the one clients expect (clients.md §4.12)')
  // The ids the SCK 2.x firmware publishes (clients.md §1.3.1) must all exist.
  const firmwareIds = [10, 221, 220, 14, 55, 56, 53, 58, 227, 113, 112, 89, 87, 88, 165, 166, 167, 168, 169, 170, 125, 126, 158, 222]
  const found = await sql<{ id: number }[]>`select id from sensors where id = any(${firmwareIds}::int[])`
  t.same(found.map((r) => r.id).sort((a, b) => a - b), [...firmwareIds].sort((a, b) => a - b))
  const [battery] = await sql`select s.unit, m.name as measurement from sensors s join measurements m on m.id = s.measurement_id where s.id = 10`
  t.match(battery, { unit: '%', measurement: 'battery' })
  const [kit] = await sql`select id from kits where id = ${defaultKitId}`
  t.ok(kit, 'the default kit exists')
})

t.test('seeding again changes nothing and keeps edits', async (t) => {
  const { sql } = await createTestDatabase(t)
  await sql`update sensors set description = 'edited by an admin' where id = 3`
  await seedCatalogue({ sql })
  const [sensor] = await sql`select description from sensors where id = 3`
  t.equal(sensor?.description, 'edited by an admin')
  const [count] = await sql<{ n: number }[]>`select count(*) as n from sensors`
  t.equal(count?.n, sensors.length)
})

t.test('new catalogue rows do not collide with seeded ids', async (t) => {
  const { sql } = await createTestDatabase(t)
  const [row] = await sql<{ id: number }[]>`insert into sensors (name) values ('new sensor') returning id`
  t.ok((row?.id ?? 0) > Math.max(...sensors.map((s) => s.id)))
})

t.test('parents are linked', async (t) => {
  const { sql } = await createTestDatabase(t)
  const withParent = sensors.filter((s) => s.parentId !== null)
  const rows = await sql<{ id: number, parent_id: number | null }[]>`select id, parent_id from sensors where parent_id is not null`
  t.equal(rows.length, withParent.length)
  const byId = new Map(rows.map((r) => [r.id, r.parent_id]))
  for (const s of withParent) t.equal(byId.get(s.id), s.parentId, `sensor ${s.id}`)
})
