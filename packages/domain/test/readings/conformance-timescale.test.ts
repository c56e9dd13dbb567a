import t from 'tap'
import { timescaleEngine, writeReadings } from '@esp/db'
import { inRunnerTransaction, openTimescalePglite } from '@esp/db/testing/pglite'
import { answersInRuns, checkConformance } from './conformance.js'

/**
 * The same conformance property on the timescale engine, on the PGlite build that bundles
 * TimescaleDB: writes through the one write path, then the continuous aggregates are refreshed
 * (PGlite runs no policies), so reads come from the materialized hierarchical tiers.
 */
t.test('timescale engine = reference, for every function and rollup', async (t) => {
  const pg = await openTimescalePglite()
  t.teardown(async () => { await pg.close() })
  const { runner } = pg
  const [engine] = await runner.query<{ value: string }>("select value from esp_settings where key = 'ts_engine'")
  t.equal(engine?.value, 'timescale')
  await runner.query("insert into users (id, username, email) values (1, 'c', 'c@example.org')")
  await runner.query("insert into sensors (id, name) values (55, 'temperature'), (56, 'humidity')")
  const runs = await checkConformance({
    runner,
    newDevice: async () => (await runner.query<{ id: number }>("insert into devices (owner_id, name) values (1, 'c') returning id"))[0]?.id ?? 0,
    write: async (deviceId, batch) => {
      // The first value per (sensor, time) within a batch, as the ingest path keeps it.
      const seen = new Set<string>()
      const rows = batch.filter((e) => !seen.has(`${e.sensor}:${e.at}`) && seen.add(`${e.sensor}:${e.at}`) !== undefined)
        .map((e) => ({ deviceId, sensorId: e.sensor, recordedAt: new Date(e.at), value: e.value, rawValue: e.value }))
      await inRunnerTransaction(runner, async () => await writeReadings(runner, timescaleEngine(), rows))
    },
    settle: async () => {
      await runner.query("call refresh_continuous_aggregate('readings_hourly', null, null)")
      await runner.query("call refresh_continuous_aggregate('readings_daily', null, null)")
    }
  }, 15)
  t.equal(runs, 15)
  t.ok(answersInRuns.streamed > 0 && answersInRuns.whole > 0, `in runs of a few buckets: ${answersInRuns.streamed} answers streamed, ${answersInRuns.whole} whole`)
})
