import type { Readable } from 'node:stream'
import t, { type Test } from 'tap'
import { loadEngine, postgresRunner, ReadingsWriter, type Runner } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { historyJson, ingestReadings, readingsHistory } from '@esp/domain'

/**
 * The bounds of a long answer (issue 35), on a real PostgreSQL: counted by the buckets that can
 * hold data and charged before anything is read, streamed up to its own bound and refused over
 * it, and a failure part way ends the stream in an error, never in a closed JSON.
 */

const START = Date.UTC(2026, 0, 5)
const MINUTE = 60_000

async function seeded (t: Test) {
  const database = await createTestDatabase(t)
  const engine = await loadEngine(postgresRunner(database.sql))
  const [user] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('s', 's@example.org') returning id`
  const [device] = await database.sql<{ id: number }[]>`insert into devices (owner_id, name) values (${user?.id ?? 0}, 's') returning id`
  const deviceId = device?.id ?? 0
  const ctx = { database, writer: new ReadingsWriter(database, engine), now: () => new Date(START + 30 * 86_400_000), limits: { maxValues: 100_000, maxFutureMs: 0, minTime: new Date(0) } }
  // 300 minutes on the first day, one reading on the 20th.
  const times = [...Array.from({ length: 300 }, (_, i) => START + i * MINUTE), START + 19 * 86_400_000]
  await ingestReadings(ctx, { id: deviceId, kitId: null, ownerId: user?.id ?? 0, isPrivate: false, forwardingToken: null }, times.map((at, i) => ({ recorded_at: new Date(at).toISOString(), sensors: [{ id: 55, value: i }] })))
  return { runner: postgresRunner(database.sql), deviceId, times }
}

const params = { sensor_id: '55', rollup: '1m', from: '2026-01-01', to: '2026-02-01' }

/** A runner that fails from its `after`-th statement on. */
function failing (runner: Runner, after: number): Runner {
  let statements = 0
  const check = (): void => { if (++statements >= after) throw new Error('the database went away') }
  return { query: async (text, values) => { check(); return await runner.query(text, values) }, copyOutBinary: async (query) => { check(); return await runner.copyOutBinary(query) } }
}

async function text (readable: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of readable) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString()
}

t.test('charged the buckets that can hold data before anything is read; over the streamed bound a 400 naming it', async (t) => {
  const { runner, deviceId } = await seeded(t)
  const charged: number[] = []
  const ctx = { runner, now: () => new Date(START), maxBuckets: 100, charge: (values: number) => { charged.push(values) } }
  const streamed = await readingsHistory({ ...ctx, stream: { maxBuckets: 1_000 } }, deviceId, params)
  t.ok('streamed' in streamed, 'streamed')
  t.same(charged, [301], 'the minutes that can hold readings, not the 44,640 of the range')
  const body = JSON.parse(await text(historyJson(streamed) as Readable)) as { readings: unknown[], sample_size: number }
  t.equal(body.readings.length, 301)
  t.equal(body.sample_size, 301)
  await t.rejects(readingsHistory({ ...ctx, stream: { maxBuckets: 300 } }, deviceId, params), { statusCode: 400, message: /up to 301 buckets of 1m holding readings; at most 300 are answered by one request/ })
  await t.rejects(readingsHistory(ctx, deviceId, params), { statusCode: 400, message: /at most 100 are answered at once/ }, 'and without streaming, maxBuckets')
  await t.rejects(readingsHistory({ ...ctx, stream: { maxBuckets: 300 } }, deviceId, { ...params, rollup: '0s' }), { statusCode: 400, message: /at most 300 are answered by one request/ }, 'raw readings too')
  // A caller over its rate limit is refused before a run is read.
  let statements = 0
  const counting: Runner = { ...runner, query: async (q, v) => { statements++; return await runner.query(q, v) }, copyOutBinary: async (q) => { statements++; return await runner.copyOutBinary(q) } }
  await t.rejects(readingsHistory({ ...ctx, runner: counting, stream: { maxBuckets: 1_000 }, charge: () => { throw new Error('429') } }, deviceId, params), /429/)
  t.equal(statements, 3, 'the sensor, the extent and the tier counts: no readings')
})

t.test('a failure part way through ends the stream in an error, after the first run', async (t) => {
  const { runner, deviceId } = await seeded(t)
  const ctx = { now: () => new Date(START), maxBuckets: 100, stream: { maxBuckets: 1_000 } }
  const whole = await text(historyJson(await readingsHistory({ ...ctx, runner }, deviceId, params)) as Readable)
  t.equal((JSON.parse(whole) as { readings: unknown[] }).readings.length, 301)
  // The sensor, the extent, the tier counts, the first run: the second run's rows fail.
  const cut = historyJson(await readingsHistory({ ...ctx, runner: failing(runner, 5) }, deviceId, params)) as Readable
  const got: Buffer[] = []
  await t.rejects((async () => { for await (const chunk of cut) got.push(chunk as Buffer) })(), /the database went away/)
  const partial = Buffer.concat(got).toString()
  t.ok(partial.startsWith('{"device_id"') && partial.includes('"readings":[["2026-01-24T00:00:00Z",300]'), `the first run (the newest reading) came: ${partial}`)
  t.notOk(partial.endsWith('}'), 'never closed')
})
