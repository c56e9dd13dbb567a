import t from 'tap'
import mqtt from 'mqtt'
import { createTestDatabase } from '@esp/db/testing'
import { startMosquitto } from '@esp/test-helpers/mosquitto'
import { until } from '@esp/test-helpers/mqtt'
import { startProcess } from '@esp/test-helpers/process'

const DEVICES = 12
const MESSAGES = 60
const SENSORS = [55, 56, 14]
const START = Date.UTC(2026, 10, 20)

t.test('scale-out: two ingest instances share an external broker; every message is stored exactly once, none lost, even when one stops', async (t) => {
  const brokerUrl = await startMosquitto(t)
  const database = await createTestDatabase(t)
  const [owner] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('fleet', 'fleet@example.org') returning id`
  const tokens = Array.from({ length: DEVICES }, (_, i) => `5ca1e${i.toString(16)}`)
  const devices = await database.sql<{ id: number, device_token: string }[]>`
    insert into devices (owner_id, name, kit_id, device_token, state)
    select ${owner?.id ?? 0}, 'fleet ' || token, 26, token, 'never_published' from unnest(${tokens}::text[]) as token
    returning id, device_token`

  const instances = ['a', 'b'].map((name) => startProcess(t, 'services/ingest/src/main.ts', {
    PORT: '0',
    DATABASE_URL: database.url,
    MQTT_BROKER_URL: brokerUrl,
    MQTT_CLIENT_ID: `esp-ingest-test-${name}`,
    MQTT_CONNECTIONS: '3'
  }))
  for (const instance of instances) await instance.waitFor(/MQTT\s+external broker/, 60_000)

  // Kits publish at QoS 1, one connection each, every message a new time (clients.md §1.4).
  const kits = await Promise.all(tokens.map(async (token) => await mqtt.connectAsync(brokerUrl, { clientId: token, reconnectPeriod: 0 })))
  t.teardown(async () => { await Promise.all(kits.map(async (kit) => await kit.endAsync(true))) })
  const publishRound = async (from: number, to: number): Promise<void> => {
    await Promise.all(kits.map(async (kit, d) => {
      for (let m = from; m < to; m++) {
        const at = new Date(START + m * 60_000).toISOString().replace('.000', '')
        await kit.publishAsync(`device/sck/${tokens[d] ?? ''}/readings/raw`, `{t:${at},${SENSORS.map((s) => `${s}:${d * 1000 + m}`).join(',')}}`, { qos: 1 })
      }
    }))
  }
  const count = async (): Promise<number> => Number((await database.sql`select count(*)::int as n from readings`)[0]?.n)

  await publishRound(0, MESSAGES / 2)
  // One instance stops mid-stream; the other must take over whatever it had not stored.
  instances[0]?.child.kill('SIGTERM')
  await publishRound(MESSAGES / 2, MESSAGES)
  t.equal(await instances[0]?.exited, 0, 'the stopped instance drained and exited cleanly')
  const expected = DEVICES * MESSAGES * SENSORS.length
  await until(async () => await count() >= expected, 60_000, `${expected} readings`)
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.equal(await count(), expected, 'every reading, none twice')
  const wrong = await database.sql`
    select r.device_id from readings r join devices d on d.id = r.device_id
    where r.value <> (position(substr(d.device_token, 6) in '0123456789abcdef') - 1) * 1000 +
      (extract(epoch from r.recorded_at) * 1000 - ${START}) / 60000
    limit 1`
  t.equal(wrong.length, 0, 'each reading is the one its device published for that time')
  const [hourly] = await database.sql`select sum(count)::int as n from readings_hourly`
  t.equal(hourly?.n, expected, 'the tiers counted each reading once')
  t.equal(devices.length, DEVICES)
})
