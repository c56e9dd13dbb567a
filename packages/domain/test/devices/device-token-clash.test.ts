import t from 'tap'
import { inTransaction, insertDevice } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { deviceService } from '@esp/domain'

// A new device's token is made until one is free (behaviour.md §5.7). Inside the creating
// transaction each try runs in a savepoint of its own (insertDevice), so a clash leaves the
// transaction usable and what it wrote before the clash stays.

t.test('a token clash inside a transaction is retried in its savepoint and the transaction commits', async (t) => {
  const database = await createTestDatabase(t)
  const { sql } = database
  const [owner] = await sql<Array<{ id: number }>>`insert into users (username, email) values ('clash', 'clash@example.org') returning id`
  if (owner === undefined) throw new Error('no user')
  await sql`insert into devices (owner_id, name, device_token) values (${owner.id}, 'holder', 'taken1')`
  const tokens = ['taken1', 'taken1', 'free01']
  const row = await inTransaction(database, async (tx) => {
    await tx.sql`insert into devices (owner_id, name, device_token) values (${owner.id}, 'before', 'before')`
    return await deviceService.withFreshToken(async (deviceToken) => await insertDevice(tx, { ownerId: owner.id, name: 'new', deviceToken }), () => tokens.shift() ?? 'spare1')
  })
  t.equal(row?.deviceToken, 'free01', 'two clashes, then a free token')
  const names = await sql<Array<{ name: string }>>`select name from devices where owner_id = ${owner.id} order by id`
  t.same(names.map((n) => n.name), ['holder', 'before', 'new'], 'the transaction committed, with what it wrote before the clashes')
})
