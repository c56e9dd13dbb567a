import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { ingestService } from '@esp/ingest'
import type { Runner } from '@esp/db'
import { buildApi, bearer, signUp } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'

/**
 * Long answers of the readings history (issue 35, findings 1 to 3), on a real PostgreSQL: the
 * buckets that hold data over the stored extent are answered whatever the span (streamed past
 * maxBuckets, exactly what the same buckets asked in pieces under it give), `to` printed to the
 * second includes the reading it names, and `limit` aggregates only the oldest readings.
 */

const NOW = new Date('2026-11-22T12:00:00Z')
const MINUTE = 60_000
const HOUR = 3_600_000
/** Three days of minutes, then (a) readings months before. */
const DENSE_FROM = Date.UTC(2026, 10, 18, 6)
const DENSE_MINUTES = 3 * 1440
const SPARSE = [Date.UTC(2026, 2, 3, 4, 5, 6, 789), Date.UTC(2026, 5, 1), Date.UTC(2026, 8, 30, 23, 59, 59)]
const MAX_BUCKETS = 600

type Tuple = [string, number | null, number?]
interface Answer { device_id: number, sensor_id: number, rollup: string, from: string, to: string, sample_size: number, readings: Tuple[] }

/**
 * The history's Runner of a request, failing from its `after`-th statement on when the request
 * says so: a failure part way through a streamed answer.
 */
function failing (runner: Runner, after: number): Runner {
  let statements = 0
  const check = (): void => { if (++statements >= after) throw new Error('the database went away') }
  return {
    query: async (text, params) => { check(); return await runner.query(text, params) },
    copyOutBinary: async (query) => { check(); return await runner.copyOutBinary(query) }
  }
}

async function seeded (t: Test, maxBuckets = MAX_BUCKETS) {
  const harness = await buildApi(t, {
    deps: { clock: () => NOW, maxBuckets },
    extra: async (app: FastifyInstance, database) => {
      await app.register(ingestService, { database, maxValues: 100_000, maxFutureSeconds: 86_400, clock: () => NOW })
      app.addHook('onRequest', async (request) => {
        const after = Number(request.headers['x-fail-after'] ?? NaN)
        if (Number.isInteger(after)) request.reads = { ...request.reads, history: failing(request.reads.history, after) }
      })
    }
  })
  const owner = await signUp(harness.app)
  const device = await makeDevice(harness.database, owner.id, { kitId: 26 })
  const times = [...SPARSE, ...Array.from({ length: DENSE_MINUTES }, (_, i) => DENSE_FROM + i * MINUTE + (i % 7) * 1000)]
  for (let at = 0; at < times.length; at += 1000) {
    const data = times.slice(at, at + 1000).map((time) => ({ recorded_at: new Date(time).toISOString(), sensors: [{ id: 55, value: (time / MINUTE) % 97 }] }))
    const res = await harness.app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })
    t.equal(res.statusCode, 200)
  }
  const get = async (query: string, headers: Record<string, string> = {}) => await harness.app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&${query}`, headers })
  return { ...harness, owner, device, times, get }
}

/**
 * The same buckets asked in pieces of `step` ms, newest piece first, joined: pieces start on the
 * boundaries of buckets of `bucket` ms from `origin`, so none is cut in two.
 */
async function inPieces (get: (query: string) => Promise<{ statusCode: number, json: () => Answer }>, query: string, from: number, to: number, step: number, bucket = MINUTE, origin = 0): Promise<{ readings: Tuple[], sampleSize: number }> {
  const readings: Tuple[] = []
  let sampleSize = 0
  for (let end = to + 1; end > from;) {
    const start = Math.max(from, Math.floor((end - step - origin) / bucket) * bucket + origin)
    const res = await get(`${query}&from=${new Date(start).toISOString()}&to=${new Date(end - 1).toISOString()}`)
    if (res.statusCode !== 200) throw new Error(`a piece: ${res.statusCode} ${JSON.stringify(res.json())}`)
    readings.push(...res.json().readings)
    sampleSize += res.json().sample_size
    end = start
  }
  return { readings, sampleSize }
}

const streamedKeys = ['device_id', 'sensor_id', 'sensor_key', 'component_id', 'rollup', 'function', 'from', 'to', 'readings', 'sample_size']
const wholeKeys = ['device_id', 'sensor_id', 'sensor_key', 'component_id', 'rollup', 'function', 'from', 'to', 'sample_size', 'readings']

t.test("the connector's default call (1m from 2001, the + as a space) answers every minute holding readings, streamed past maxBuckets, as the same minutes asked in pieces", async (t) => {
  const { get, times } = await seeded(t)
  const res = await get('rollup=1m&from=2001-01-01%2000:00:00%2000:00&function=avg')
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.headers['content-length'], undefined, 'streamed: no length ahead')
  const body = JSON.parse(res.body) as Answer
  t.same(Object.keys(body), streamedKeys, 'one object, sample_size after the readings')
  t.match(body, { rollup: '1m', function: 'avg', from: '2001-01-01T00:00:00Z', to: '2026-11-22T12:00:00Z' })
  t.equal(body.readings.length, times.length, 'a bucket a reading: every minute, and the three months before')
  t.equal(body.sample_size, times.length)
  const last = times.at(-1) ?? 0
  t.same(body.readings[0], [new Date(Math.floor(last / MINUTE) * MINUTE).toISOString().replace('.000Z', 'Z'), (last / MINUTE) % 97], 'newest first')
  t.same(body.readings.at(-1), ['2026-03-03T04:05:00Z', (SPARSE[0] ?? 0) / MINUTE % 97])
  // Under the limit, in pieces of maxBuckets minutes.
  const pieces = await inPieces(get, 'rollup=1m&function=avg', DENSE_FROM, last, MAX_BUCKETS * MINUTE)
  t.ok(pieces.readings.length > 7 * MAX_BUCKETS)
  t.same(body.readings.slice(0, pieces.readings.length), pieces.readings, 'the same buckets, values and order as asked in pieces under the limit')
  t.same(body.readings.slice(pieces.readings.length).map((r) => r[0]), ['2026-09-30T23:59:00Z', '2026-06-01T00:00:00Z', '2026-03-03T04:05:00Z'], 'then the months before')
  t.equal(body.sample_size, pieces.sampleSize + SPARSE.length)
})

t.test('streamed with coverage and every function; in a zone, on its own clock; raw readings too', async (t) => {
  const { get, times } = await seeded(t)
  const last = times.at(-1) ?? 0
  for (const fn of ['max', 'first', 'last', 'dev', 'count']) {
    const body = JSON.parse((await get(`rollup=5m&function=${fn}&coverage=true&from=2026-01-01`)).body) as Answer
    t.same(Object.keys(body), streamedKeys, `${fn}: streamed`)
    const pieces = await inPieces(get, `rollup=5m&function=${fn}&coverage=true`, DENSE_FROM, last, MAX_BUCKETS * 5 * MINUTE, 5 * MINUTE)
    t.same(body.readings.slice(0, pieces.readings.length), pieces.readings, `${fn}: the pieces' buckets, with their counts`)
    t.equal(body.readings.length, pieces.readings.length + SPARSE.length)
  }
  const raw = JSON.parse((await get('rollup=0s&from=2026-01-01')).body) as Answer
  t.same(Object.keys(raw), streamedKeys, 'raw: streamed')
  t.equal(raw.readings.length, times.length)
  t.equal(raw.sample_size, times.length)
  const pieces = await inPieces(get, 'rollup=0s', Date.UTC(2026, 0, 1), last, 500 * MINUTE)
  t.same(raw.readings, pieces.readings, 'raw: every reading, as asked in pieces')
})

t.test("on a zone's wall clock, streamed on its own bucket boundaries", async (t) => {
  // 72 hours of data over maxBuckets of 30: Kathmandu's hours (+5:45) from raw rows, New York's from the hourly tier.
  const { get } = await seeded(t, 30)
  for (const [zone, origin] of [['Asia/Kathmandu', 15 * MINUTE], ['America/New_York', 0]] as const) {
    const from = Date.UTC(2026, 10, 1) + origin
    const to = Date.UTC(2026, 10, 22) + origin - 1
    const body = JSON.parse((await get(`rollup=1h&timezone=${zone}&function=max&coverage=true&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`)).body) as Answer
    t.same(Object.keys(body), streamedKeys, `${zone}: streamed`)
    t.ok(body.readings.length >= 72, `${zone}: ${body.readings.length} hours`)
    const pieces = await inPieces(get, `rollup=1h&timezone=${zone}&function=max&coverage=true`, from, to, 24 * HOUR, HOUR, origin)
    t.same(body.readings, pieces.readings, `${zone}: as its days asked one at a time`)
  }
})

t.test('a window of more buckets than maxBuckets but few with data is one answer as before; pretty and callback answers are never streamed', async (t) => {
  const { get } = await seeded(t)
  const sparse = await get('rollup=1s&from=2026-01-01&to=2026-10-01')
  t.equal(sparse.statusCode, 200)
  const body = JSON.parse(sparse.body) as Answer
  t.same(Object.keys(body), wholeKeys, 'sample_size before the readings: written whole')
  t.same(body.readings.map((r) => r[0]), ['2026-09-30T23:59:59Z', '2026-06-01T00:00:00Z', '2026-03-03T04:05:06Z'])
  t.equal(sparse.headers['content-length'], String(Buffer.byteLength(sparse.body)))
  const pretty = await get('rollup=1s&from=2026-01-01&to=2026-10-01&pretty=true')
  t.equal(pretty.body, JSON.stringify(body, null, 2), 'pretty as ever')
  for (const envelope of ['pretty=true', 'callback=cb']) {
    const res = await get(`rollup=1m&from=2026-01-01&${envelope}`)
    t.equal(res.statusCode, 400, envelope)
    t.match(res.body, /at most 600 are answered at once with pretty or callback/, `${envelope}: a 400 naming maxBuckets`)
  }
  const all = await get('rollup=1m&from=2026-11-01&all_intervals=true')
  t.equal(all.statusCode, 400, 'all_intervals answers every bucket of the range: bounded by maxBuckets as before')
})

t.test('a failure part way through a streamed answer cuts the connection: never a JSON that looks complete', async (t) => {
  const { app, device } = await seeded(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const fetch = async (failAfter: number | null) => await new Promise<{ status: number, complete: boolean, body: string, error: string | null }>((resolve) => {
    const headers: Record<string, string> = failAfter === null ? {} : { 'x-fail-after': String(failAfter) }
    http.get({ port, host: '127.0.0.1', path: `/v0/devices/${device}/readings?sensor_id=55&rollup=1m&from=2026-01-01`, headers }, (res) => {
      const chunks: Buffer[] = []
      let error: string | null = null
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', (err) => { error = err.message })
      res.on('close', () => { resolve({ status: res.statusCode ?? 0, complete: res.complete, body: Buffer.concat(chunks).toString(), error }) })
    })
  })
  const whole = await fetch(null)
  t.ok(whole.complete && whole.error === null, 'without a failure, complete')
  t.equal((JSON.parse(whole.body) as Answer).readings.length, 4323)
  // The sensor, the extent, the days' counts and the first run's rows are read; the second run fails.
  const cut = await fetch(5)
  t.equal(cut.status, 200, 'the first run was on its way')
  t.ok(cut.body.length > 1000 && cut.body.startsWith('{"device_id"'), `${cut.body.length} bytes came`)
  t.notOk(cut.complete, 'the response never completed')
  t.throws(() => JSON.parse(cut.body), 'and what came is no JSON')
  const early = await fetch(4)
  t.equal(early.status, 500, 'a failure before the first bytes is an error answer of its own')
  t.match(JSON.parse(early.body), { id: String, message: String })
})

t.test('to printed to the second includes the reading it names: raw and rolled up', async (t) => {
  const { app, device, owner, get } = await seeded(t)
  const at = '2026-11-22T11:58:32.076Z'
  const posted = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: at, sensors: [{ id: 55, value: 42.5 }] }] } })
  t.equal(posted.statusCode, 200)
  const lastReadingAt = (await app.inject({ url: `/v0/devices/${device}`, headers: bearer(owner.token) })).json().last_reading_at as string
  t.equal(lastReadingAt, '2026-11-22T11:58:32Z', 'printed to the second')
  const raw = JSON.parse((await get(`rollup=0s&from=2026-11-22T11:00:00Z&to=${lastReadingAt}`)).body) as Answer
  t.same(raw.readings[0], [at, 42.5], 'the newest reading is there (a raw reading keeps its milliseconds)')
  t.equal(raw.to, lastReadingAt, 'to echoed as given')
  const minutes = JSON.parse((await get(`rollup=1m&function=last&from=2026-11-22T11:00:00Z&to=${lastReadingAt}`)).body) as Answer
  t.same(minutes.readings[0], ['2026-11-22T11:58:00Z', 42.5], 'and its minute holds it')
  const exact = JSON.parse((await get('rollup=0s&from=2026-11-22T11:00:00Z&to=2026-11-22T11:58:32.075Z')).body) as Answer
  t.same(exact.readings, [], 'with milliseconds, to is exact')
  const epoch = JSON.parse((await get(`rollup=0s&from=2026-11-22T11:00:00Z&to=${Date.parse(lastReadingAt) / 1000}`)).body) as Answer
  t.same(epoch.readings[0], [at, 42.5], 'epoch seconds too')
})

t.test('limit aggregates only the oldest readings of the range, as KairosDB did', async (t) => {
  const { get, times, app, device } = await seeded(t)
  const dense = times.slice(SPARSE.length)
  const from = new Date(DENSE_FROM).toISOString()
  const ninetieth = new Date(dense[89] ?? 0).toISOString()
  const limited = JSON.parse((await get(`rollup=1h&function=count&from=${from}&to=2026-11-22T00:00:00Z&limit=90`)).body) as Answer
  const cut = JSON.parse((await get(`rollup=1h&function=count&from=${from}&to=${ninetieth}`)).body) as Answer
  t.same(limited.readings, cut.readings, 'the range ends at the 90th reading')
  t.same(limited.readings, [['2026-11-18T07:00:00Z', 30], ['2026-11-18T06:00:00Z', 60]])
  t.equal(limited.sample_size, 90)
  t.equal(limited.to, '2026-11-22T00:00:00Z', 'to echoed as given')
  const raw = JSON.parse((await get(`rollup=0s&from=${from}&limit=3`)).body) as Answer
  t.same(raw.readings.map((r) => r[0]), dense.slice(0, 3).reverse().map((at) => new Date(at).toISOString().replace('.000Z', 'Z')), 'raw: the three oldest, newest first')
  const more = JSON.parse((await get(`rollup=1d&function=count&from=${from}&limit=100000`)).body) as Answer
  t.equal(more.sample_size, dense.length, 'a limit over the readings there are changes nothing')
  const several = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_ids=55&rollup=1h&function=count&from=${from}&limit=90` })).json()
  t.same(several.sensors[0].readings, limited.readings, 'with sensor_ids, each sensor its own oldest')
  // With all_intervals, every bucket of the range all the same, empty past the limit.
  const every = `rollup=1h&function=count&from=${from}&to=2026-11-18T10:59:59Z&all_intervals=true&limit=90`
  const expected = [['2026-11-18T10:00:00Z', null], ['2026-11-18T09:00:00Z', null], ['2026-11-18T08:00:00Z', null], ['2026-11-18T07:00:00Z', 30], ['2026-11-18T06:00:00Z', 60]]
  t.same((JSON.parse((await get(every)).body) as Answer).readings, expected)
  t.same((await app.inject({ url: `/v0/devices/${device}/readings?sensor_ids=55&${every}` })).json().sensors[0].readings, expected)
  for (const bad of ['0', '-1', '100001', 'many', '1.5']) {
    const res = await get(`rollup=1h&limit=${bad}`)
    t.equal(res.statusCode, 400, `limit=${bad}`)
    t.match(res.json(), { id: 'bad_request', message: /limit must be an integer from 1 to 100000/, errors: { limit: [String] } })
  }
})
