import t from 'tap'
import { CHANGES_CHANNEL } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { startApiReplicas } from '@esp/test-helpers/process'

// Issue 20: each api process keeps the reference data (sensors, measurements, kits, tags, tag
// sensors) in memory, yet a write made through one replica, or straight in the database, is seen
// by every other one in the very next request. Two real api processes on one database; every
// round first makes both hold the data, then writes through A (or SQL) and asks B at once.

const ROUNDS = 4

/** What the test reads of a sensor, wherever it is shown. */
interface SensorShown { id: number, name: string, unit: string | null, measurement: { definition: string | null } | null }

t.test('a write to the reference data through one api process, or in SQL, is seen at once by another', async (t) => {
  const database = await createTestDatabase(t)
  const [baseA = '', baseB = ''] = await startApiReplicas(t, database.url, { ADMIN_USERNAME: 'curator', ADMIN_EMAIL: 'curator@example.org', ADMIN_PASSWORD: 'curator password' })

  const json = { 'content-type': 'application/json' }
  const session = await fetch(`${baseA}/v0/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'curator', password: 'curator password' }) })
  t.equal(session.status, 200)
  const admin = { ...json, authorization: `Bearer ${(await session.json() as { access_token: string }).access_token}` }
  const get = async <T>(base: string, path: string): Promise<T> => {
    const res = await fetch(`${base}${path}`)
    t.equal(res.status, 200, `GET ${path}`)
    return await res.json() as T
  }
  const patch = async (path: string, body: object): Promise<void> => {
    const res = await fetch(`${baseA}${path}`, { method: 'PATCH', headers: admin, body: JSON.stringify(body) })
    t.equal(res.status, 200, `PATCH ${path} through A`)
  }

  // A kit sensor on a device with a latest value, so the device, the kit and the sensor all show it.
  const [link] = await database.sql<Array<{ kitId: number, sensorId: number, measurementId: number }>>`
    select ks.kit_id as "kitId", ks.sensor_id as "sensorId", s.measurement_id as "measurementId"
    from kit_sensors ks join sensors s on s.id = ks.sensor_id where s.measurement_id is not null order by ks.kit_id, ks.position limit 1`
  if (link === undefined) throw new Error('the seeded catalogue has no kit sensor with a measurement')
  const created = await fetch(`${baseA}/v0/devices`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'shown', kit_id: link.kitId }) })
  t.equal(created.status, 201)
  const deviceId = (await created.json() as { id: number }).id
  await database.sql`insert into components (device_id, sensor_id) values (${deviceId}, ${link.sensorId}) on conflict do nothing`
  await database.sql`insert into latest_readings (device_id, sensor_id, recorded_at, value, raw_value) values (${deviceId}, ${link.sensorId}, now(), 1, 1)`

  const views = async (base: string) => {
    const device = await get<{ data: { sensors: SensorShown[] } }>(base, `/v0/devices/${deviceId}`)
    const kit = await get<{ sensors: SensorShown[] }>(base, `/v0/kits/${link.kitId}`)
    const shown = (sensors: SensorShown[]): SensorShown | undefined => sensors.find((s) => s.id === link.sensorId)
    return {
      sensor: await get<SensorShown>(base, `/v0/sensors/${link.sensorId}`),
      inDevice: shown(device.data.sensors),
      inKit: shown(kit.sensors),
      inList: (await get<SensorShown[]>(base, `/v0/sensors?q[id_eq]=${link.sensorId}`))[0],
      measurement: await get<{ definition: string | null }>(base, `/v0/measurements/${link.measurementId}`)
    }
  }
  const heldEverywhere = async (): Promise<void> => { for (const base of [baseA, baseB, baseA, baseB]) await views(base) }

  for (let round = 1; round <= ROUNDS; round++) {
    await heldEverywhere()
    const name = `sensor renamed ${round}`
    await patch(`/v0/sensors/${link.sensorId}`, { name })
    const seen = await views(baseB)
    t.equal(seen.sensor.name, name, `round ${round}: B's sensor has A's name`)
    t.equal(seen.inDevice?.name, name, `round ${round}: so does the device's sensor on B`)
    t.equal(seen.inKit?.name, name, `round ${round}: and the kit's`)
    t.equal(seen.inList?.name, name, `round ${round}: and the list's`)

    await heldEverywhere()
    const definition = `defined in round ${round}`
    await patch(`/v0/measurements/${link.measurementId}`, { definition })
    const after = await views(baseB)
    t.equal(after.measurement.definition, definition, `round ${round}: B's measurement has A's definition`)
    t.equal(after.sensor.measurement?.definition, definition, `round ${round}: as embedded in the sensor`)
    t.equal(after.inDevice?.measurement?.definition, definition, `round ${round}: and in the device`)

    // An operator's SQL, with no API call at all: the trigger tells every process.
    await heldEverywhere()
    const unit = `unit ${round}`
    await database.sql`update sensors set unit = ${unit} where id = ${link.sensorId}`
    for (const base of [baseB, baseA]) t.equal((await views(base)).inDevice?.unit, unit, `round ${round}: a unit set in SQL shows at once`)

    await heldEverywhere()
    const tag = `tag-${round}`
    t.equal((await fetch(`${baseB}/v0/tags/${tag}`)).status, 404, `round ${round}: B has no ${tag} yet`)
    const made = await fetch(`${baseA}/v0/tags`, { method: 'POST', headers: admin, body: JSON.stringify({ name: tag }) })
    t.equal(made.status, 201)
    t.equal((await get<{ name: string }>(baseB, `/v0/tags/${tag}`)).name, tag, `round ${round}: B finds the tag A made`)
  }
})

t.test('a write to the reference data notifies on commit, not before, and bumps the generation once per statement', async (t) => {
  const database = await createTestDatabase(t)
  const heard: string[] = []
  const listener = await database.sql.listen(CHANGES_CHANNEL, (payload) => { heard.push(payload) })
  t.teardown(async () => { await listener.unlisten() })
  const generation = async (): Promise<number> => (await database.sql<Array<{ value: number }>>`select value from catalogue_generation`)[0]?.value ?? -1
  const before = await generation()
  const waitForNotice = async (): Promise<void> => {
    for (let i = 0; i < 100 && heard.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  }

  await database.sql.begin(async (tx) => {
    await tx`update sensors set description = description || '' where id in (select id from sensors limit 5)`
    await new Promise((resolve) => setTimeout(resolve, 300))
    t.same(heard, [], 'nothing is heard before the transaction commits')
  })
  await waitForNotice()
  t.same(heard.map((text) => JSON.parse(text)), [{ topic: 'catalogue', payload: null }], 'one change after it commits')
  t.equal(await generation(), before + 1, 'one statement over five rows bumps the generation once')

  heard.length = 0
  await database.sql.begin(async (tx) => {
    await tx`insert into tags (name) values ('rolled back')`
    throw new Error('roll back')
  }).catch(() => {})
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same(heard, [], 'a rolled-back write tells nobody')
  t.equal(await generation(), before + 1, 'and leaves the generation')

  // Each table, in one transaction rolled back at the end: a real change bumps it (visible to the
  // transaction itself), a statement that changes nothing does not (the seed runs at every start).
  const changes: Array<[string, string]> = [
    ['measurements', 'update measurements set name = name where id = (select min(id) from measurements)'],
    ['sensors', 'update sensors set name = name where id = (select min(id) from sensors)'],
    ['kits', 'update kits set name = name where id = (select min(id) from kits)'],
    ['kit_sensors', 'update kit_sensors set key = key where (kit_id, sensor_id) = (select kit_id, sensor_id from kit_sensors limit 1)'],
    ['tags', "insert into tags (name) values ('trigger probe')"],
    ['tag_sensors', "insert into tag_sensors (name) values ('trigger probe')"],
    ['sensor_tags', "insert into sensor_tags (sensor_id, tag_sensor_id) select (select min(id) from sensors), id from tag_sensors where name = 'trigger probe'"]
  ]
  await database.sql.begin(async (tx) => {
    const inside = async (): Promise<number> => (await tx<Array<{ value: number }>>`select value from catalogue_generation`)[0]?.value ?? -1
    for (const [table, change] of changes) {
      const was = await inside()
      await tx.unsafe(`delete from ${table} where false`)
      t.equal(await inside(), was, `a statement on ${table} that changes nothing leaves it`)
      await tx.unsafe(change)
      t.equal(await inside(), was + 1, `a change to ${table} bumps it`)
    }
    throw new Error('roll back')
  }).catch((err: unknown) => { if (!(err instanceof Error && err.message === 'roll back')) throw err })
})
