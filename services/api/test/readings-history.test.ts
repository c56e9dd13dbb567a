import t, { type Test } from 'tap'
import { bearer, signUp, signUpAs } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

const NOW = new Date('2026-11-22T12:00:00Z')

async function seeded (t: Test, options: { isPrivate?: boolean } = {}) {
  const harness = await buildPlatform(t, { clock: () => NOW })
  const owner = await signUp(harness.app)
  const device = await makeDevice(harness.database, owner.id, { kitId: 26, isPrivate: options.isPrivate ?? false })
  // Two days of 10-minute readings of temperature (55) and humidity (56).
  const data = Array.from({ length: 288 }, (_, i) => ({
    recorded_at: new Date(Date.UTC(2026, 10, 20, 0, i * 10)).toISOString(),
    sensors: [{ id: 55, value: 20 + (i % 6) }, { id: 56, value: 50 }]
  }))
  const res = await harness.app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })
  t.equal(res.statusCode, 200)
  return { ...harness, owner, device }
}

t.test('rollups answer with the contract fields, newest first, from tiers and raw rows', async (t) => {
  const { app, device } = await seeded(t)
  const res = await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=1d&from=2026-11-20&to=2026-11-21T23:59:59Z` })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    device_id: device,
    sensor_id: 55,
    sensor_key: 't',
    component_id: res.json().component_id,
    rollup: '1d',
    function: 'avg',
    from: '2026-11-20T00:00:00Z',
    to: '2026-11-21T23:59:59Z',
    sample_size: 288,
    readings: [['2026-11-21T00:00:00Z', 22.5], ['2026-11-20T00:00:00Z', 22.5]]
  })
  t.type(res.json().component_id, 'number')
  const hourly = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_key=t&rollup=1h&function=max&from=2026-11-20T00:30:00Z&to=2026-11-20T03:00:00Z` })).json()
  t.same(hourly.readings, [['2026-11-20T03:00:00Z', 20], ['2026-11-20T02:00:00Z', 25], ['2026-11-20T01:00:00Z', 25], ['2026-11-20T00:00:00Z', 25]])
  t.equal(hourly.sample_size, 1 + 6 + 6 + 3)
  const counts = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=56&rollup=1w&function=count&from=2026-11-01&to=2026-11-30` })).json()
  t.same(counts.readings, [['2026-11-16T00:00:00Z', 288]], 'weeks start on Monday')
  const raw = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=0s&from=2026-11-21T23:40:00Z&to=2026-11-22T00:00:00Z` })).json()
  t.same(raw.readings, [['2026-11-21T23:50:00Z', 25], ['2026-11-21T23:40:00Z', 24]])
})

t.test('a rollup is JSON with its charset, and takes pretty and callback as every route does', async (t) => {
  const { app, device } = await seeded(t)
  const url = `/v0/devices/${device}/readings?sensor_id=55&rollup=1d&from=2026-11-20&to=2026-11-21T23:59:59Z`
  const plain = await app.inject({ url })
  t.equal(plain.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(plain.body, JSON.stringify(plain.json()), 'compact, as the serializer wrote it')
  const pretty = await app.inject({ url: `${url}&pretty=true` })
  t.equal(pretty.body, JSON.stringify(plain.json(), null, 2))
  const jsonp = await app.inject({ url: `${url}&callback=window.cb` })
  t.equal(jsonp.headers['content-type'], 'application/javascript; charset=utf-8')
  t.equal(jsonp.body, `/**/window.cb(${plain.body})`)
})

t.test('all_intervals fills every bucket of the range with null where empty', async (t) => {
  const { app, device } = await seeded(t)
  const res = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=1d&from=2026-11-18&to=2026-11-22T00:00:00Z&all_intervals=true` })).json()
  t.same(res.readings.map((r: [string, unknown]) => r[0]), ['2026-11-22T00:00:00Z', '2026-11-21T00:00:00Z', '2026-11-20T00:00:00Z', '2026-11-19T00:00:00Z', '2026-11-18T00:00:00Z'])
  t.same(res.readings.map((r: [string, unknown]) => r[1]), [null, 22.5, 22.5, null, null])
})

t.test('defaults: avg, and the six weeks before now', async (t) => {
  const { app, device } = await seeded(t)
  const res = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=1M` })).json()
  t.match(res, { function: 'avg', from: '2026-10-11T12:00:00Z', to: '2026-11-22T12:00:00Z', sample_size: 288, readings: [['2026-11-01T00:00:00Z', 22.5]] })
})

t.test('every from/to form real clients send', async (t) => {
  const { app, device } = await seeded(t)
  for (const from of ['2026-11-20T00:00:00.000Z', '2026-11-20 00:00:00+00:00', '2026-11-20 00:00:00 00:00', '2026-11-20', String(Date.UTC(2026, 10, 20) / 1000), '2026-11-20T01:00:00%2B01:00']) {
    const res = await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=1d&function=count&from=${from.replace(/ /g, '%20')}&to=2026-11-20T23:59:59Z` })
    t.equal(res.statusCode, 200, from)
    t.same(res.json().readings, [['2026-11-20T00:00:00Z', 144]], from)
  }
})

t.test('bad parameters are 4xx with the error body', async (t) => {
  const { app, device } = await seeded(t)
  const cases: [string, number, RegExp][] = [
    ['rollup=1h', 400, /sensor_key OR sensor_id/],
    ['sensor_id=55', 400, /rollup/],
    ['sensor_id=55&rollup=None', 400, /rollup/],
    ['sensor_id=55&rollup=5x', 400, /rollup/],
    ['sensor_id=55&rollup=1h&function=median', 400, /function/],
    ['sensor_id=55&rollup=1h&from=2020-15', 400, /from parameter/],
    ['sensor_id=55&rollup=1h&to=yesterday', 400, /to parameter/],
    ['sensor_id=55&rollup=1h&from=2026-11-21&to=2026-11-20', 400, /after/],
    ['sensor_id=abc&rollup=1h', 400, /sensor_id/],
    ['sensor_id=999999&rollup=1h', 404, /Sensor/],
    ['sensor_id=55&rollup=1s&from=2020-01-01&to=2026-11-21&all_intervals=true', 400, /narrow|larger rollup/],
    ['sensor_id=55&rollup=1h&limit=0', 400, /limit must be an integer from 1 to 100000/]
  ]
  for (const [query, status, message] of cases) {
    const res = await app.inject({ url: `/v0/devices/${device}/readings?${query}` })
    t.equal(res.statusCode, status, query)
    t.match(res.json(), { id: String, message }, query)
  }
  t.equal((await app.inject({ url: '/v0/devices/999999/readings?sensor_id=55&rollup=1h' })).statusCode, 404)
  const empty = await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=10&rollup=1h` })
  t.equal(empty.statusCode, 200)
  t.same(empty.json().readings, [], 'a sensor without data is an empty list')
})

t.test('a fine rollup over days answers the buckets that hold readings, counted by them, not by the span (issue 35)', async (t) => {
  const { app, device } = await seeded(t)
  // Two days of milliseconds are 172,800,000 buckets; 288 of them hold a reading.
  const res = await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=1ms&from=2026-11-20&to=2026-11-22` })
  t.equal(res.statusCode, 200)
  const body = res.json()
  t.same(Object.keys(body), ['device_id', 'sensor_id', 'sensor_key', 'component_id', 'rollup', 'function', 'from', 'to', 'sample_size', 'readings'], 'written whole, as ever')
  t.equal(body.readings.length, 288)
  t.same(body.readings[0], ['2026-11-21T23:50:00Z', 25])
  t.equal(body.sample_size, 288)
})

t.test('readings of a private device: owner and admins only', async (t) => {
  const harness = await seeded(t, { isPrivate: true })
  const other = await signUp(harness.app)
  const admin = await signUpAs(harness, 'admin')
  const url = `/v0/devices/${harness.device}/readings?sensor_id=55&rollup=1d&from=2026-11-20`
  t.equal((await harness.app.inject({ url })).statusCode, 404, 'hidden: as a missing device')
  t.equal((await harness.app.inject({ url, headers: bearer(other.token) })).statusCode, 404)
  t.equal((await harness.app.inject({ url, headers: bearer(harness.owner.token) })).statusCode, 200)
  t.equal((await harness.app.inject({ url, headers: bearer(admin.token) })).statusCode, 200)
  // The device check runs beside the sensor and the buckets, and still decides first: a stranger
  // learns nothing of the sensors or the data, and a missing device is a missing device.
  for (const query of ['sensor_id=999999&rollup=1d', 'sensor_key=nope&rollup=1d', 'sensor_id=55&rollup=5x', 'sensor_id=55&rollup=1ms&from=2020-01-01', 'rollup=1d']) {
    const res = await harness.app.inject({ url: `/v0/devices/${harness.device}/readings?${query}`, headers: bearer(other.token) })
    t.equal(res.statusCode, 404, `private: ${query}`)
    t.notMatch(res.body, /Sensor|rollup|bucket/, `private: ${query} says nothing of the request`)
    const missing = await harness.app.inject({ url: `/v0/devices/999999/readings?${query}` })
    t.equal(missing.statusCode, 404, `missing device: ${query}`)
    t.equal(res.body, missing.body.replace('999999', String(harness.device)), `private: ${query} answers as a missing device`)
  }
  t.equal((await harness.app.inject({ url: '/v0/devices/abc/readings?sensor_id=55&rollup=1d' })).statusCode, 404)
})

t.test('timezone: days from local midnight, the same readings in other buckets; an unknown zone is a 400 naming it', async (t) => {
  const { app, device } = await seeded(t)
  const base = `/v0/devices/${device}/readings?sensor_id=56&function=count&from=2026-11-19T12:00:00Z&to=2026-11-22T12:00:00Z`
  const madrid = (await app.inject({ url: `${base}&rollup=1d&timezone=Europe/Madrid` })).json()
  t.same(madrid.readings, [['2026-11-21T23:00:00Z', 6], ['2026-11-20T23:00:00Z', 144], ['2026-11-19T23:00:00Z', 138]],
    'Madrid days start at 23:00 UTC in November, the times stay UTC')
  const newYork = (await app.inject({ url: `${base}&rollup=1d&timezone=America/New_York&all_intervals=true` })).json()
  t.same(newYork.readings.map((r: [string, number | null]) => r[0]), ['2026-11-22T05:00:00Z', '2026-11-21T05:00:00Z', '2026-11-20T05:00:00Z', '2026-11-19T05:00:00Z'], 'every local day of the range')
  t.equal(newYork.readings.reduce((sum: number, r: [string, number | null]) => sum + (r[1] ?? 0), 0), 288, 'the same readings, counted once')
  const kolkata = (await app.inject({ url: `${base}&rollup=1d&timezone=Asia/Kolkata` })).json()
  t.same(kolkata.readings, [['2026-11-21T18:30:00Z', 33], ['2026-11-20T18:30:00Z', 144], ['2026-11-19T18:30:00Z', 111]], 'half-hour offsets, from raw rows')
  const utc = (await app.inject({ url: `${base}&rollup=1d&timezone=UTC` })).json()
  t.same(utc.readings, (await app.inject({ url: `${base}&rollup=1d` })).json().readings, 'UTC is the default')

  const unknown = await app.inject({ url: `${base}&rollup=1d&timezone=Europe/Atlantis` })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json(), { id: 'bad_request', message: /timezone Europe\/Atlantis is not a known IANA time zone/, errors: { timezone: ['is not a known time zone'] } })
})

t.test('coverage: each bucket carries its number of readings, 0 for an empty one', async (t) => {
  const { app, device } = await seeded(t)
  const url = `/v0/devices/${device}/readings?sensor_id=55&rollup=1d&from=2026-11-19&to=2026-11-21T23:59:59Z&all_intervals=true`
  const plain = (await app.inject({ url })).json()
  const covered = (await app.inject({ url: `${url}&coverage=true` })).json()
  t.same(plain.readings, [['2026-11-21T00:00:00Z', 22.5], ['2026-11-20T00:00:00Z', 22.5], ['2026-11-19T00:00:00Z', null]], 'without it, pairs as ever')
  t.same(covered.readings, [['2026-11-21T00:00:00Z', 22.5, 144], ['2026-11-20T00:00:00Z', 22.5, 144], ['2026-11-19T00:00:00Z', null, 0]])
  const hours = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=1h&from=2026-11-20T00:30:00Z&to=2026-11-20T02:00:00Z&coverage=true` })).json()
  t.same(hours.readings.map((r: number[]) => r[2]), [1, 6, 3], 'a bucket the range cuts counts what the range holds')
  const raw = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=55&rollup=0s&from=2026-11-21T23:40:00Z&to=2026-11-22T00:00:00Z&coverage=true` })).json()
  t.same(raw.readings, [['2026-11-21T23:50:00Z', 25, 1], ['2026-11-21T23:40:00Z', 24, 1]], 'raw readings: one each')
})

t.test('several sensors in one request: one series each, on the same buckets, each as its own request answers', async (t) => {
  const { app, device, owner } = await seeded(t)
  // Humidity (56) also on the 22nd, temperature (55) not: the series still share their buckets.
  const more = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data: [{ recorded_at: '2026-11-22T06:00:00Z', sensors: [{ id: 56, value: 70 }] }] } })
  t.equal(more.statusCode, 200)
  const range = 'rollup=1d&from=2026-11-19T00:00:00Z&to=2026-11-22T12:00:00Z'
  const both = await app.inject({ url: `/v0/devices/${device}/readings?sensor_ids=55,56&${range}` })
  t.equal(both.statusCode, 200)
  const body = both.json()
  t.same(Object.keys(body), ['device_id', 'rollup', 'function', 'from', 'to', 'sensors'])
  t.same(body.sensors.map((s: { sensor_id: number, sensor_key: string }) => [s.sensor_id, s.sensor_key]), [[55, 't'], [56, 'h']])
  const [temperature, humidity] = body.sensors
  t.same(temperature.readings, [['2026-11-22T00:00:00Z', null], ['2026-11-21T00:00:00Z', 22.5], ['2026-11-20T00:00:00Z', 22.5]], 'null where this sensor has no readings and another has')
  t.same(humidity.readings.map((r: unknown[]) => r[0]), temperature.readings.map((r: unknown[]) => r[0]), 'the same bucket times')
  for (const series of body.sensors) {
    const alone = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_id=${series.sensor_id}&${range}` })).json()
    t.same(series.readings.filter((r: unknown[]) => r[1] !== null), alone.readings, `sensor ${series.sensor_id}: the values of its own request`)
    t.equal(series.sample_size, alone.sample_size)
  }
  const byKey = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_keys=t,h&${range}` })).json()
  t.same(byKey.sensors, body.sensors, 'by key, the same')
  const all = (await app.inject({ url: `/v0/devices/${device}/readings?sensor_ids=all&${range}&coverage=true&timezone=Europe/Madrid` })).json()
  t.ok(all.sensors.length >= 2, `all of the device's sensors (${all.sensors.length})`)
  t.ok(all.sensors.every((s: { readings: unknown[][] }) => s.readings.every((r) => r.length === 3)), 'with coverage and a zone as for one sensor')

  for (const [query, status, field] of [
    ['sensor_ids=55,x', 400, 'sensor_ids'],
    [`sensor_ids=${Array.from({ length: 65 }, (_, i) => i + 1).join(',')}`, 400, 'sensor_ids'],
    ['sensor_ids=55,999999', 404, null],
    ['sensor_keys=t,nope', 404, null]
  ] as const) {
    const res = await app.inject({ url: `/v0/devices/${device}/readings?${query}&${range}` })
    t.equal(res.statusCode, status, query.slice(0, 40))
    if (field !== null) t.ok(Object.keys(res.json().errors ?? {}).includes(field), `names ${field}`)
  }
  const missing = await app.inject({ url: `/v0/devices/${device}/readings?rollup=1d` })
  t.equal(missing.statusCode, 400, 'no sensor at all is still a 400')
})
