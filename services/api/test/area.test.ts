import t from 'tap'
import { bearer, errorBody, signUp } from '@esp/test-helpers/api'
import { buildPlatform, makeDevice } from '@esp/test-helpers/platform'

/**
 * Area statistics and grids over real HTTP and PostgreSQL (issue 38): which devices count (the
 * selectors, exposure, privacy, archived devices, a measurement's sensor), the answer's shape,
 * bad input as 4xx before any work, and the grid's cells against a plain inverse-distance sum.
 * The statistics themselves are held to the raw reference on both engines in
 * packages/domain/test/area.
 */

const HOUR = 3_600_000
const START = Date.UTC(2026, 9, 5)
const TAG = 'Area Test Tag'
const BOX = '2.10,41.35,2.20,41.45'

interface Window { time: string, devices: number, mean: number, sd: number | null, min: number, max: number, median: number, percentiles: number[], values?: Array<[number, number]> }
interface Statistics { measurement_id: number | null, sensor_id: number | null, rollup: string, timezone: string, devices: number, percentiles: number[], windows: Window[] }
interface Grid { type: string, steps: string[], devices: Array<{ id: number, latitude: number, longitude: number, values: Array<number | null> }>, classes: Array<{ from: number, to: number, color: string }>, features: Array<{ geometry: { coordinates: number[][][] }, properties: { values: Array<number | null>, class: Array<number | null> } }> }

t.test('area statistics and interpolated grids', async (t) => {
  const { app, database } = await buildPlatform(t)
  const owner = await signUp(app)
  const stranger = await signUp(app)
  await database.sql`insert into tags (name, description) values (${TAG}, 'devices of the area test')`
  const place = async (id: number, fields: { lat: number, lng: number, exposure?: string, tagged?: boolean }): Promise<void> => {
    await database.sql`update devices set latitude = ${fields.lat}, longitude = ${fields.lng}, exposure = ${fields.exposure ?? null} where id = ${id}`
    if (fields.tagged === true) await database.sql`insert into device_tags (device_id, tag_id) select ${id}, id from tags where name = ${TAG}`
  }
  const post = async (id: number, values: (hour: number) => Array<{ id: number, value: number }>, hours = 48, every = 1): Promise<void> => {
    const data = []
    for (let h = 0; h < hours; h += every) data.push({ recorded_at: new Date(START + h * HOUR + 7 * 60_000).toISOString(), sensors: values(h) })
    const res = await app.inject({ method: 'POST', url: `/v0/devices/${id}/readings`, headers: bearer(owner.token), payload: { data } })
    t.equal(res.statusCode, 200, `readings of device ${id}`)
  }
  const outdoor = await makeDevice(database, owner.id, { name: 'outdoor' })
  const indoor = await makeDevice(database, owner.id, { name: 'indoor' })
  const hidden = await makeDevice(database, owner.id, { name: 'hidden', isPrivate: true })
  const far = await makeDevice(database, owner.id, { name: 'madrid' })
  const archived = await makeDevice(database, owner.id, { name: 'archived' })
  const twoTemperatures = await makeDevice(database, owner.id, { name: 'two temperatures' })
  await place(outdoor, { lat: 41.39, lng: 2.17, exposure: 'outdoor', tagged: true })
  await place(indoor, { lat: 41.40, lng: 2.16, exposure: 'indoor' })
  await place(hidden, { lat: 41.41, lng: 2.15, tagged: true })
  await place(far, { lat: 40.42, lng: -3.7 })
  await place(archived, { lat: 41.38, lng: 2.18 })
  await place(twoTemperatures, { lat: 41.37, lng: 2.14 })
  await post(outdoor, (h) => [{ id: 55, value: 10 + h }])
  await post(indoor, (h) => [{ id: 55, value: 20 + h }], 48, 3)
  await post(hidden, (h) => [{ id: 55, value: 271.8281 + h }])
  await post(far, (h) => [{ id: 55, value: -50 + h }])
  await post(archived, (h) => [{ id: 55, value: 999 + h }])
  // Sensor 12 is of the same measurement (air temperature) as 55, and the lower id.
  await post(twoTemperatures, (h) => [{ id: 55, value: 30 + h }, { id: 12, value: 40 + h }])
  await database.sql`update devices set archived_at = now() where id = ${archived}`

  const range = `from=${new Date(START).toISOString()}&to=${new Date(START + 48 * HOUR - 1000).toISOString()}`
  const statistics = async (query: string, token?: string): Promise<Statistics> => {
    const res = await app.inject({ url: `/v0/readings/statistics?${query}`, headers: token === undefined ? {} : bearer(token) })
    t.equal(res.statusCode, 200, `${query}: ${res.body.slice(0, 300)}`)
    return res.json()
  }
  const valuesOf = (answer: Statistics): Map<string, Array<[number, number]>> => new Map(answer.windows.map((w) => [w.time, w.values ?? []]))

  await t.test('the devices that count', async (t) => {
    const anonymous = await statistics(`sensor_id=55&bbox=${BOX}&rollup=1h&per_device=true&percentiles=25,75&${range}`)
    t.equal(anonymous.devices, 3, 'the outdoor, indoor and two-temperature devices: not the private, archived or far one')
    t.equal(anonymous.windows.length, 48, 'an hour a window, newest first')
    t.ok(anonymous.windows[0]!.time > anonymous.windows[1]!.time, 'newest first')
    const first = anonymous.windows.at(-1)!
    t.same(first.values, [[outdoor, 10], [indoor, 20], [twoTemperatures, 30]], "each device's own value, by device id")
    t.same({ devices: first.devices, mean: first.mean, min: first.min, max: first.max, median: first.median, percentiles: first.percentiles }, { devices: 3, mean: 20, min: 10, max: 30, median: 20, percentiles: [15, 25] })
    t.equal(first.sd, 10, 'sample standard deviation')
    t.equal(anonymous.windows[0]!.devices, 2, 'the indoor device reports every third hour: not in the last window')
    t.notOk(JSON.stringify(anonymous).includes('271.8281'), 'nothing of the private device')

    const own = await statistics(`sensor_id=55&bbox=${BOX}&rollup=1h&per_device=true&${range}`, owner.token)
    t.equal(own.devices, 4, 'its owner counts the private device')
    t.same(valuesOf(own).get(first.time), [[outdoor, 10], [indoor, 20], [hidden, 271.8281], [twoTemperatures, 30]])
    const strangers = await statistics(`sensor_id=55&bbox=${BOX}&rollup=1h&per_device=true&${range}`, stranger.token)
    t.equal(strangers.devices, 3, 'a stranger does not')

    t.equal((await statistics(`sensor_id=55&bbox=${BOX}&exposure=outdoor&rollup=1h&${range}`)).devices, 2, 'outdoor: the outdoor device and the one without an exposure')
    t.equal((await statistics(`sensor_id=55&bbox=${BOX}&exposure=indoor&rollup=1h&${range}`)).devices, 1)
    t.equal((await statistics(`sensor_id=55&with_tags=${encodeURIComponent(TAG)}&rollup=1h&${range}`)).devices, 1, 'the tag: not the private device that has it')
    t.equal((await statistics(`sensor_id=55&with_tags=${encodeURIComponent(TAG)}&rollup=1h&${range}`, owner.token)).devices, 2)
    t.equal((await statistics(`sensor_id=55&device_ids=${outdoor},${far}&rollup=1h&${range}`)).devices, 2, 'by ids, wherever they are')
    // The same selection rule serves the export across devices.
    const exported = await app.inject({ url: `/v0/readings/export?bbox=${BOX}&exposure=indoor&format=ndjson&${range}` })
    t.equal(exported.statusCode, 200)
    t.same([...new Set(exported.body.trim().split('\n').map((line) => (JSON.parse(line) as { device_id: number }).device_id))], [indoor], 'exposure=indoor exports the indoor device alone')
    t.equal((await app.inject({ url: `/v0/readings/export?bbox=${BOX}&exposure=cellar` })).statusCode, 400)

    const measurement = await statistics(`measurement_id=1&bbox=${BOX}&rollup=1d&per_device=true&${range}`)
    t.equal(measurement.measurement_id, 1)
    const day = measurement.windows.at(-1)!
    t.same(day.values?.find(([id]) => id === twoTemperatures), [twoTemperatures, 40 + 11.5], 'a device with two sensors of the measurement counts once, by the lower sensor id (12)')
    const byKey = await statistics(`sensor_key=t&bbox=${BOX}&rollup=1d&per_device=true&${range}`)
    t.same(byKey.windows.at(-1)!.values?.find(([id]) => id === twoTemperatures), [twoTemperatures, 30 + 11.5], "a sensor's default key: sensor 55")

    const zoned = await statistics(`sensor_id=55&device_ids=${outdoor}&rollup=1d&timezone=Europe/Madrid&function=max&${range}`)
    t.equal(zoned.timezone, 'Europe/Madrid')
    t.same(zoned.windows.map((w) => w.time), ['2026-10-06T22:00:00Z', '2026-10-05T22:00:00Z', '2026-10-04T22:00:00Z'], 'local days, newest first')
    t.same(zoned.windows.map((w) => w.max), [10 + 47, 10 + 45, 10 + 21], "each local day's maximum")
  })

  await t.test('bad input is a 4xx before any work', async (t) => {
    const cases: Array<[string, number, string]> = [
      [`bbox=${BOX}&rollup=1h`, 400, 'measurement_id OR sensor_id OR sensor_key'],
      [`sensor_id=55&measurement_id=1&bbox=${BOX}&rollup=1h`, 400, 'one of'],
      [`sensor_id=55&rollup=1h&${range}`, 400, 'device_ids, with_tags or bbox'],
      [`sensor_id=55&bbox=${BOX}&${range}`, 400, 'rollup'],
      [`sensor_id=55&bbox=${BOX}&rollup=0s&${range}`, 400, 'rollup'],
      [`sensor_id=55&bbox=${BOX}&rollup=1h&percentiles=50,101`, 400, 'percentiles'],
      [`sensor_id=55&bbox=${BOX}&rollup=1h&percentiles=${Array.from({ length: 21 }, (_, i) => i).join(',')}`, 400, 'percentiles'],
      [`sensor_id=55&bbox=${BOX}&rollup=1h&exposure=attic`, 400, 'exposure'],
      ['sensor_id=55&bbox=200,41,2,42&rollup=1h', 400, 'bbox'],
      [`sensor_id=55&bbox=${BOX}&rollup=1h&timezone=Mars/Olympus`, 400, 'Mars/Olympus'],
      [`sensor_id=55&bbox=${BOX}&rollup=1m&from=1970-01-01&to=2200-01-01`, 400, 'windows'],
      [`sensor_id=55&bbox=${BOX}&rollup=1h&from=2026-10-07&to=2026-10-01`, 400, 'from'],
      [`measurement_id=999999&bbox=${BOX}&rollup=1h`, 404, 'Measurement'],
      [`sensor_id=999999&bbox=${BOX}&rollup=1h`, 404, 'Sensor'],
      [`sensor_id=55&device_ids=${hidden}&rollup=1h`, 404, 'Device']
    ]
    for (const [query, status, says] of cases) {
      const res = await app.inject({ url: `/v0/readings/statistics?${query}` })
      t.equal(res.statusCode, status, query)
      t.match(errorBody(res).message ?? '', says, `${query}: says ${says}`)
    }
    const missing = await app.inject({ url: '/v0/readings/statistics?sensor_id=55&device_ids=987654321&rollup=1h' })
    const hiddenOne = await app.inject({ url: `/v0/readings/statistics?sensor_id=55&device_ids=${hidden}&rollup=1h` })
    t.equal(hiddenOne.body.replace(String(hidden), 'ID'), missing.body.replace('987654321', 'ID'), 'a private device named by id answers as a missing one')
    const grid = [
      [`sensor_id=55&${range}`, 400, 'bbox'],
      [`sensor_id=55&bbox=${BOX}&cell_size=0.01&${range}`, 400, 'cells'],
      [`sensor_id=55&bbox=${BOX}&cell_shape=triangle&${range}`, 400, 'cell_shape'],
      [`sensor_id=55&bbox=${BOX}&power=0&${range}`, 400, 'power'],
      [`sensor_id=55&bbox=${BOX}&max_distance=-1&${range}`, 400, 'max_distance'],
      [`sensor_id=55&bbox=${BOX}&rollup=1h&${range}`, 400, 'windows']
    ] as const
    for (const [query, status, says] of grid) {
      const res = await app.inject({ url: `/v0/readings/interpolation?${query}` })
      t.equal(res.statusCode, status, query)
      t.match(errorBody(res).message ?? '', says, `${query}: says ${says}`)
    }
  })

  await t.test("the grid: each cell an inverse-distance sum of the devices' values", async (t) => {
    const res = await app.inject({ url: `/v0/readings/interpolation?sensor_id=55&bbox=${BOX}&cell_size=1&max_distance=3&${range}` })
    t.equal(res.statusCode, 200, res.body.slice(0, 300))
    t.match(res.headers['content-type'], /^application\/geo\+json/)
    const grid: Grid = res.json()
    t.equal(grid.type, 'FeatureCollection')
    t.same(grid.steps, ['2026-10-05T00:00:00Z', '2026-10-06T00:00:00Z'], 'a day a step')
    t.same(grid.devices.map((d) => d.id).sort((a, b) => a - b), [outdoor, indoor, twoTemperatures], 'the visible devices of the box')
    t.ok(grid.features.length > 0 && grid.classes.length > 0, `${grid.features.length} cells, ${grid.classes.length} classes`)
    const R = 6371.0088
    const rad = Math.PI / 180
    let checked = 0
    for (const feature of grid.features) {
      const ring = feature.geometry.coordinates[0]!
      t.same(ring[0], ring.at(-1), 'a closed ring')
      const corners = ring.slice(0, -1)
      const lng = corners.reduce((s, p) => s + p[0]!, 0) / corners.length
      const lat = corners.reduce((s, p) => s + p[1]!, 0) / corners.length
      grid.steps.forEach((_, step) => {
        let weights = 0
        let sum = 0
        let exact: number | null = null
        for (const device of grid.devices) {
          const value = device.values[step]
          if (value === null || value === undefined) continue
          const x = (device.longitude - lng) * rad * Math.cos(((device.latitude + lat) / 2) * rad) * R
          const y = (device.latitude - lat) * rad * R
          const d = Math.hypot(x, y)
          if (d > 3) continue
          if (d < 1e-9) exact = value
          weights += 1 / d ** 2
          sum += value / d ** 2
        }
        const want = exact ?? (weights === 0 ? null : sum / weights)
        const got = feature.properties.values[step] ?? null
        if (want === null || got === null) t.equal(got, want, `cell at ${lat},${lng} step ${step}: out of reach is empty`)
        // The ring's corners are rounded to 6 decimals (a tenth of a metre): the centre found from them moves as much.
        else if (Math.abs(got - want) > 1e-4 * Math.max(1, Math.abs(want))) t.fail(`cell at ${lat},${lng} step ${step}: ${got}, expected ${want}`)
        else checked++
        const cls = feature.properties.class[step]
        if (got !== null) t.ok(cls !== null && cls !== undefined && grid.classes[cls]!.from <= got && got <= grid.classes[cls]!.to, 'its class holds it')
      })
    }
    t.ok(checked > 10, `${checked} cell values as the plain sum gives them`)
    const far = await app.inject({ url: `/v0/readings/interpolation?sensor_id=55&bbox=2.40,41.60,2.50,41.70&max_distance=1&${range}` })
    t.equal(far.statusCode, 200)
    t.same(far.json().features, [], 'no device within reach of any cell: no cell is invented')
    const hexagons = await app.inject({ url: `/v0/readings/interpolation?sensor_id=55&bbox=${BOX}&cell_shape=hexagon&cell_size=2&max_distance=5&${range}`, headers: bearer(owner.token) })
    t.equal(hexagons.statusCode, 200)
    const hex: Grid = hexagons.json()
    t.ok(hex.features.length > 0 && hex.features.every((f) => f.geometry.coordinates[0]!.length === 7), 'hexagons: six corners and the first again')
    t.ok(hex.devices.some((d) => d.id === hidden), 'the owner sees its private device in the grid')
  })
})
