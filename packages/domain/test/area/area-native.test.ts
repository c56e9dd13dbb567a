import t from 'tap'
import { dayOffsetsOfZones, ingestReadings, rollupFunctions } from '@esp/domain'
import { loadEngine, postgresRunner, ReadingsWriter, registerDayOffsets } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ClosedDays } from '../../src/area/closed-days.js'
import { checkAreaConformance } from './area-conformance.js'

/**
 * Area statistics on the native engine (real PostgreSQL), readings written through the one write
 * path, with Madrid's and New York's days kept in daily tiers of their offsets: every function,
 * the tiers, raw edges and zones, against the reference from raw points; read cold, then from the
 * closed days the process keeps, then after a backfill that must not be served from them.
 */
t.test('native engine: area statistics = reference', async (t) => {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  t.equal(engine.name, 'native')
  await registerDayOffsets(database.sql, dayOffsetsOfZones(['Europe/Madrid', 'America/New_York']))
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('area', 'area@example.org') returning id`
  const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => new Date(Date.UTC(2026, 0, 1)), limits: { maxValues: 100_000, maxFutureMs: 86_400_000, minTime: new Date(0) } }
  const days = new ClosedDays(64 * 2 ** 20)
  const checked = await checkAreaConformance({
    runner: postgresRunner(database.sql),
    newDevice: async () => (await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 'area') returning id`)[0]?.id ?? 0,
    write: async (deviceId, sensorId, points) => {
      for (let i = 0; i < points.length; i += 5_000) {
        await ingestReadings(ctx, { id: deviceId, kitId: null, ownerId: user?.id ?? 0, isPrivate: false, forwardingToken: null },
          points.slice(i, i + 5_000).map((p) => ({ recorded_at: new Date(p.at).toISOString(), sensors: [{ id: sensorId, value: p.value }] })))
      }
    },
    settle: async () => {},
    kept: {
      days,
      revision: async (deviceId, sensorId) => {
        const [row] = await database.sql<{ r: string }[]>`select history_revision as r from latest_readings where device_id = ${deviceId} and sensor_id = ${sensorId}`
        return row === undefined ? null : Number(row.r)
      }
    }
  }, rollupFunctions)
  t.equal(checked, 3 * 11 * rollupFunctions.length, 'every rollup, zone and function: read cold, from kept days, and after a backfill')
  t.ok(days.size > 100, `${days.size} closed days kept`)
})
