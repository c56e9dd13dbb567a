import t from 'tap'
import { postgresRunner, rawPairs, rawStates } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'

t.test('raw pairs come back by binary COPY: every time to the millisecond, in order, a NULL value as NaN, nothing outside the range', async (t) => {
  const database = await createTestDatabase(t)
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('r', 'r@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'd') returning id`
  const deviceId = device?.id ?? 0
  await database.sql`select esp_ensure_reading_partitions('1999-12-01'::timestamptz, '2000-01-01'::timestamptz)`
  const times = ['1999-12-31T23:59:59.999Z', '2000-01-01T00:00:00.000Z', '2000-01-01T00:00:00.001Z', '2000-01-31T12:00:00.500Z']
  const values = [-273.15, null, 1.7976931348623157e308, 101325.00999999999]
  for (const [i, at] of times.entries()) {
    await database.sql`insert into readings (device_id, sensor_id, recorded_at, value, raw_value) values (${deviceId}, 55, ${at}, ${values[i] ?? null}, 0)`
  }
  await database.sql`insert into readings (device_id, sensor_id, recorded_at, value, raw_value) values (${deviceId}, 56, '2000-01-01T00:00:00Z', 7, 7)`
  const pairs = await rawPairs(postgresRunner(database.sql), { deviceId, sensorId: 55, from: new Date(times[0] ?? ''), until: new Date(times[3] ?? ''), limit: 10 })
  t.same([...pairs], [Date.parse(times[0] ?? ''), -273.15, Date.parse(times[1] ?? ''), NaN, Date.parse(times[2] ?? ''), 1.7976931348623157e308])
  const firstTwo = await rawPairs(postgresRunner(database.sql), { deviceId, sensorId: 55, from: new Date(0), until: new Date(), limit: 2 })
  t.same([...firstTwo], [Date.parse(times[0] ?? ''), -273.15, Date.parse(times[1] ?? ''), NaN], 'the limit keeps the earliest')
  const lastTwo = await rawPairs(postgresRunner(database.sql), { deviceId, sensorId: 55, from: new Date(0), until: new Date(), limit: 2, newest: true })
  t.same([...lastTwo], [Date.parse(times[2] ?? ''), 1.7976931348623157e308, Date.parse(times[3] ?? ''), 101325.00999999999], 'with newest, the latest, still in time order')
  const none = await rawPairs(postgresRunner(database.sql), { deviceId, sensorId: 57, from: new Date(0), until: new Date(), limit: 10 })
  t.equal(none.length, 0, 'no rows, no pairs')
  await t.rejects(rawPairs(postgresRunner(database.sql), { deviceId: 1.5, sensorId: 55, from: new Date(0), until: new Date(), limit: 10 }), /not an integer/, 'COPY takes only integers made here')
  await t.rejects(rawStates(postgresRunner(database.sql), { deviceId, sensorId: 55, from: new Date(0), until: new Date(), interval: "1 day'); drop table readings; --", origin: '1970-01-01', fn: 'avg' }), /not a time or an interval/, 'and times and intervals')
  const [day] = (await rawStates(postgresRunner(database.sql), { deviceId, sensorId: 55, from: new Date(0), until: new Date(), interval: '1 day', origin: '1970-01-01T00:00:00.000Z', fn: 'avg' })).toArray()
  t.match(day, { bucket: Date.UTC(1999, 11, 31), count: 1, sum: -273.15 }, 'raw states come the same way')
})
