import t from 'tap'
import { timescaleEngine, writeReadings } from '@esp/db'
import { inRunnerTransaction, openTimescalePglite } from '@esp/db/testing/pglite'
import { checkAreaConformance } from './area-conformance.js'

/**
 * Area statistics on the timescale engine (the PGlite build that bundles TimescaleDB): the tiers
 * are the continuous aggregates, refreshed by hand as PGlite runs no policies.
 */
t.test('timescale engine: area statistics = reference', async (t) => {
  const pg = await openTimescalePglite()
  t.teardown(async () => { await pg.close() })
  const { runner } = pg
  await runner.query("insert into users (id, username, email) values (1, 'a', 'a@example.org')")
  await runner.query("insert into sensors (id, name) values (55, 'temperature')")
  const fns = ['avg', 'max', 'dev', 'first', 'count'] as const
  const checked = await checkAreaConformance({
    runner,
    newDevice: async () => (await runner.query<{ id: number }>("insert into devices (owner_id, name) values (1, 'a') returning id"))[0]?.id ?? 0,
    write: async (deviceId, sensorId, points) => {
      const rows = points.map((p) => ({ deviceId, sensorId, recordedAt: new Date(p.at), value: p.value, rawValue: p.value }))
      await inRunnerTransaction(runner, async () => await writeReadings(runner, timescaleEngine(), rows))
    },
    settle: async () => {
      await runner.query("call refresh_continuous_aggregate('readings_hourly', null, null)")
      await runner.query("call refresh_continuous_aggregate('readings_daily', null, null)")
    }
  }, fns)
  t.equal(checked, 3 * 11 * fns.length, 'every rollup and zone, five functions, before and after a backfill')
})
