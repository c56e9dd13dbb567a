import t from 'tap'
import mqtt from 'mqtt'
import { addDevice, call, type Device, signUp, signUpAs, startPlatform, until } from './platform.js'
import { closeAll, PacketType, RawMqtt } from './mqtt-raw.js'
import { runPython } from './python.js'
import { E1, E2, E3, E4, E5, E6 } from '@esp/test-helpers/firmware-payloads'

/**
 * clients.md §4 rules 37–41 and §1.6: the SCK 2.x firmware's MQTT traffic, sent as raw bytes the
 * way PubSubClient writes them, and through the `mqtt` npm client and paho-mqtt; the example
 * payloads E1–E6 and the reference parser's edge cases replayed. What was stored is read back
 * over HTTP, as the owner would.
 */
const platform = await startPlatform(t)
t.teardown(closeAll)
const { base, mqttPort } = platform
const owner = await signUp(platform)
const stranger = await signUp(platform)
const admin = await signUpAs(platform, 'admin')

const INVENTORY = '{"time":"2026-03-02T03:00:41Z","id":"A1B2C3D4-504E4B4B-372E314A-FF0A1B2C","mac":"5E:CF:7F:D1:75:78","errors":0,"tests":[{"0":1.5},{"1":23.4}]}'

const topic = (device: Device, kind: string): string => `device/sck/${device.token}/${kind}`
type Json = Record<string, unknown>
type Pairs = Array<[string, number | null]>

/** Every stored reading of the device in a range, per sensor id, as its owner reads them back (rollup 0s: raw; sensor_ids=all). */
async function stored (device: Device, from: string, to: string): Promise<Map<number, Pairs>> {
  const res = await call(`${base}/devices/${device.id}/readings?sensor_ids=all&rollup=0s&from=${from}&to=${to}`, { token: owner.token })
  if (res.status !== 200) throw new Error(`readings of ${device.id}: ${res.status} ${res.text}`)
  // Every series comes on the same times, null where a sensor has no reading.
  const sensors = (res.json as { sensors: Array<{ sensor_id: number, readings: Pairs }> }).sensors
    .map((s) => ({ id: s.sensor_id, readings: s.readings.filter(([, value]) => value !== null).sort((a, b) => a[0].localeCompare(b[0])) }))
  return new Map(sensors.filter((s) => s.readings.length > 0).map((s) => [s.id, s.readings]))
}
const count = (readings: Map<number, Pairs>): number => [...readings.values()].reduce((n, pairs) => n + pairs.length, 0)
/** Waits until `expected` readings of the range are stored (a QoS 0 publish has no acknowledgement to wait for). */
async function storedWhen (device: Device, from: string, to: string, expected: number): Promise<Map<number, Pairs>> {
  let last = new Map<number, Pairs>()
  // Generous: on a loaded machine a burst takes a while; only a failing test waits this long.
  await until(async () => { last = await stored(device, from, to); return count(last) >= expected }, 20_000, `${expected} readings of device ${device.id}`).catch(() => {})
  return last
}
const shown = async (device: Device, token = owner.token): Promise<Json> => (await call(`${base}/devices/${device.id}`, { token })).json as Json
const sensorValue = (body: Json, id: number): unknown => ((body.data as { sensors: Json[] }).sensors.find((s) => s.id === id))?.value

/** The firmware's connection: client id = token, nothing else, keep-alive 120, clean session. */
async function firmware (device: Device | string): Promise<RawMqtt> {
  const { kit, returnCode } = await RawMqtt.connect(mqttPort, { clientId: typeof device === 'string' ? device : device.token, keepAlive: 120, cleanSession: true })
  if (returnCode !== 0) throw new Error(`CONNACK ${returnCode}`)
  return kit
}

t.test('rule 37: CONNECT as PubSubClient writes it (client id = token, no credentials, keep-alive 120, clean session) and PUBLISH at QoS 0 without retain', async (t) => {
  const device = await addDevice(platform, owner)
  const { kit, returnCode } = await RawMqtt.connect(mqttPort, { clientId: device.token, keepAlive: 120, cleanSession: true })
  t.equal(returnCode, 0, 'CONNACK 0: accepted')
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-02T10:21:00Z,55:23.41,56:48.72}')
  const back = await storedWhen(device, '2026-03-02T10:00:00Z', '2026-03-02T11:00:00Z', 2)
  t.same(back.get(55), [['2026-03-02T10:21:00Z', 23.41]])
  t.same(back.get(56), [['2026-03-02T10:21:00Z', 48.72]])
  t.same(kit.received.map((p) => p.type), [PacketType.CONNACK], 'the broker sent nothing but the CONNACK')
  t.notOk(kit.closed, 'the connection stays open')
  await kit.end()
})

t.test('rule 37: a new connection each publish cycle, the socket dropped without DISCONNECT, and an idle connection that sends no PINGREQ', async (t) => {
  const device = await addDevice(platform, owner)
  for (let cycle = 0; cycle < 3; cycle++) {
    const kit = await firmware(device)
    kit.publish(topic(device, 'readings/raw'), `{t:2026-03-02T10:2${cycle}:00Z,55:2${cycle}.5}`)
    // The SAM powers the ESP off after the cycle: no DISCONNECT, the TCP connection just ends.
    await new Promise((resolve) => setTimeout(resolve, 50))
    kit.drop()
  }
  const back = await storedWhen(device, '2026-03-02T10:00:00Z', '2026-03-02T11:00:00Z', 3)
  t.same(back.get(55)?.map(([, v]) => v), [20.5, 21.5, 22.5], 'each cycle\'s message is stored')
  // With publish intervals under 60 s the ESP stays on and the session sits idle: loop() is never called.
  const kit = await firmware(device)
  await new Promise((resolve) => setTimeout(resolve, 4000))
  t.notOk(kit.closed, 'an idle connection without PINGREQ is not dropped (keep-alive 120 s allows 180 s)')
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-02T10:30:00Z,55:30.5}')
  t.equal((await storedWhen(device, '2026-03-02T10:30:00Z', '2026-03-02T10:30:00Z', 1)).get(55)?.length, 1, 'and what it sends after the wait is stored')
  await kit.end()
})

t.test('rule 37: meaningless credentials (the 2016 prototype\'s user/password) and QoS 1 are accepted too', async (t) => {
  const device = await addDevice(platform, owner)
  const { kit, returnCode } = await RawMqtt.connect(mqttPort, { clientId: device.token, username: 'user', password: 'password', keepAlive: 120 })
  t.equal(returnCode, 0, 'CONNACK 0 with user/password')
  await kit.publishQos1(topic(device, 'readings/raw'), '{t:2026-03-02T11:00:00Z,55:11}', 7)
  t.pass('PUBACK for the QoS 1 publish')
  t.same((await stored(device, '2026-03-02T11:00:00Z', '2026-03-02T11:00:00Z')).get(55), [['2026-03-02T11:00:00Z', 11]], 'stored by the time of the PUBACK')
  await kit.end()
})

t.test('rule 37: the mqtt npm client and paho-mqtt (Python) with the firmware\'s settings', async (t) => {
  const device = await addDevice(platform, owner)
  const client = await mqtt.connectAsync(platform.mqttUrl, { clientId: device.token, clean: true, keepalive: 120, protocolVersion: 4, reconnectPeriod: 0 })
  await client.publishAsync(topic(device, 'readings/raw'), '{t:2026-03-02T12:00:00Z,55:12}', { qos: 0, retain: false })
  await client.endAsync()
  t.equal((await storedWhen(device, '2026-03-02T12:00:00Z', '2026-03-02T12:00:00Z', 1)).get(55)?.length, 1, 'mqtt.js at QoS 0')

  const paho = await runPython<{ connack: number, published: boolean[] }>('kit.py', {
    host: '127.0.0.1',
    port: mqttPort,
    client_id: device.token,
    messages: [
      { topic: topic(device, 'hello'), payload: E1(device.token), qos: 0 },
      { topic: topic(device, 'readings/raw'), payload: '{t:2026-03-02T12:01:00Z,55:12.5}', qos: 0 },
      { topic: topic(device, 'readings'), payload: '{"data":[{"recorded_at":"2026-03-02T12:02:00Z","sensors":[{"id":55,"value":13}]}]}', qos: 1 }
    ]
  })
  t.equal(paho.connack, 0, 'paho: CONNACK 0')
  t.same(paho.published, [true, true, true], 'paho: every message went out (the QoS 1 one acknowledged)')
  const back = await storedWhen(device, '2026-03-02T12:00:00Z', '2026-03-02T12:10:00Z', 3)
  t.same(back.get(55)?.map(([, v]) => v), [12, 12.5, 13], 'paho\'s raw and JSON readings are stored')
  const credentials = await runPython<{ connack: number, published: boolean[] }>('kit.py', { host: '127.0.0.1', port: mqttPort, client_id: device.token, username: 'user', password: 'password', messages: [{ topic: topic(device, 'readings/raw'), payload: '{t:2026-03-02T12:03:00Z,55:14}', qos: 1 }] })
  t.equal(credentials.connack, 0, 'paho with user/password: CONNACK 0')
  t.same(credentials.published, [true])
})

t.test('rule 38: hello, info, readings, readings/raw and device/inventory on one connection; the token comes from the topic; nothing is sent back', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'hello'), E1(device.token))
  kit.publish(topic(device, 'info'), E2)
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-03T08:00:00Z,55:8}')
  kit.publish(topic(device, 'readings'), '{"data":[{"recorded_at":"2026-03-03T08:01:00Z","sensors":[{"id":55,"value":8.1}]}]}')
  kit.publish('device/inventory', INVENTORY)
  const back = await storedWhen(device, '2026-03-03T08:00:00Z', '2026-03-03T09:00:00Z', 2)
  t.same(back.get(55)?.map(([, v]) => v), [8, 8.1], 'both readings topics are stored for the device of the topic\'s token')
  await until(async () => ((await shown(device)).hardware as Json).last_status_message !== null, 15_000, 'the info message').catch(() => {})
  t.same(((await shown(device)).hardware as Json).last_status_message, JSON.parse(E2), 'info is stored')
  await kit.ping()
  t.same(kit.received.map((p) => p.type), [PacketType.CONNACK, PacketType.PINGRESP], 'no PUBLISH ever reaches the device')
  await kit.end()
  // A client whose id is not the token (an integration) publishes with the token as username: the topic's device.
  const other = await addDevice(platform, owner)
  const { kit: integration, returnCode } = await RawMqtt.connect(mqttPort, { clientId: 'integration-gateway-1', username: other.token, password: 'password' })
  t.equal(returnCode, 0)
  await integration.publishQos1(topic(other, 'readings'), '{"data":[{"recorded_at":"2026-03-03T08:02:00Z","sensors":[{"id":55,"value":8.2}]}]}', 1)
  t.same((await stored(other, '2026-03-03T08:00:00Z', '2026-03-03T09:00:00Z')).get(55), [['2026-03-03T08:02:00Z', 8.2]])
  await integration.end()
})

t.test('rule 40: the raw form with null, spaces and t anywhere; JSON with one and several entries and the documented zone-less time', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-04T10:00:00Z,55:null,56 : 48.72 , 14:312}')
  kit.publish(topic(device, 'readings/raw'), '{55:23.5,t:2026-03-04T10:01:00Z,56:40}')
  kit.publish(topic(device, 'readings/raw'), ' { t:2026-03-04T10:02:00Z , 55 : -3.25 } ')
  kit.publish(topic(device, 'readings'), '{"data":[{"recorded_at":"2026-03-04T10:03:00Z","sensors":[{"id":55,"value":3}]}]}')
  kit.publish(topic(device, 'readings'), '{"data":[{"recorded_at":"2026-03-04 10:04:00","sensors":[{"id":55,"value":4}]},{"recorded_at":"2026-03-04 10:05:00","sensors":[{"id":55,"value":5},{"id":56,"value":50}]}]}')
  const back = await storedWhen(device, '2026-03-04T10:00:00Z', '2026-03-04T11:00:00Z', 9)
  t.same(back.get(55), [['2026-03-04T10:01:00Z', 23.5], ['2026-03-04T10:02:00Z', -3.25], ['2026-03-04T10:03:00Z', 3], ['2026-03-04T10:04:00Z', 4], ['2026-03-04T10:05:00Z', 5]], 'sensor 55: null dropped, t not first, spaces, JSON, zone-less UTC')
  t.same(back.get(56), [['2026-03-04T10:00:00Z', 48.72], ['2026-03-04T10:01:00Z', 40], ['2026-03-04T10:05:00Z', 50]])
  t.same(back.get(14), [['2026-03-04T10:00:00Z', 312]])
  await kit.end()
})

t.test('rule 40: every QoS 0 message the broker accepts is kept: a burst of 120 on one connection', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  const start = Date.parse('2026-03-05T00:00:00Z')
  for (let m = 0; m < 120; m++) kit.publish(topic(device, 'readings/raw'), `{t:${new Date(start + m * 60_000).toISOString().replace('.000Z', 'Z')},10:87,55:${m},56:${m / 2}}`)
  kit.drop()
  const back = await storedWhen(device, '2026-03-05T00:00:00Z', '2026-03-05T02:00:00Z', 360)
  t.equal(back.get(55)?.length, 120, 'all 120 messages of sensor 55')
  t.equal(count(back), 360, 'every value of every message')
})

t.test('rule 40: a backlog with old timestamps does not roll back last_reading_at or the latest values; the first message moves state to has_published', async (t) => {
  const device = await addDevice(platform, owner)
  t.not((await shown(device)).state, 'has_published', `before: ${String((await shown(device)).state)}`)
  const kit = await firmware(device)
  kit.publish(topic(device, 'readings/raw'), E3)
  await storedWhen(device, '2026-03-02T10:21:00Z', '2026-03-02T10:21:00Z', 19)
  t.equal((await shown(device)).state, 'has_published', 'the first readings message moves state')
  for (const payload of E4) kit.publish(topic(device, 'readings/raw'), payload)
  await storedWhen(device, '2026-03-01T22:00:00Z', '2026-03-02T11:00:00Z', 19 + 9 + 9 + 10)
  const body = await shown(device)
  t.equal(body.last_reading_at, '2026-03-02T10:21:00Z', 'last_reading_at stays at the newest')
  t.equal(sensorValue(body, 55), 23.41, 'the latest temperature stays the newest one')
  t.equal(sensorValue(body, 10), 87, 'and the battery')
  await kit.end()
})

t.test('rule 40: a raw or JSON message with one unknown sensor id stores the known ones', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-06T10:00:00Z,55:21.5,999999:1,56:40}')
  kit.publish(topic(device, 'readings'), '{"data":[{"recorded_at":"2026-03-06T10:01:00Z","sensors":[{"id":55,"value":22},{"id":999999,"value":1},{"id":56,"value":41}]}]}')
  const back = await storedWhen(device, '2026-03-06T10:00:00Z', '2026-03-06T11:00:00Z', 4)
  t.same(back.get(55), [['2026-03-06T10:00:00Z', 21.5], ['2026-03-06T10:01:00Z', 22]], 'sensor 55 of both messages')
  t.same(back.get(56), [['2026-03-06T10:00:00Z', 40], ['2026-03-06T10:01:00Z', 41]], 'sensor 56 of both messages')
  t.notOk(back.has(999999), 'nothing for the unknown id')
  await kit.end()
})

t.test('rule 41: info is stored unchanged ("not synced", "0", no rcause), shown to the owner and admins, and hardware follows hw_ver', async (t) => {
  const device = await addDevice(platform, owner)
  const unsynced = '{"time":"0","hw_ver":"2.1","id":"A1B2C3D4504E4B4B372E314AFF0A1B2C","sam_ver":"0.9.11-910fb56-master-sck21","sam_bd":"2026-02-10T11:42:07Z","mac":"not synced","esp_ver":"not synced","esp_bd":"not synced"}'
  const kit = await firmware(device)
  kit.publish(topic(device, 'info'), unsynced)
  await until(async () => ((await shown(device)).hardware as Json).last_status_message !== null, 15_000, 'the info message').catch(() => {})
  for (const [label, token] of [['the owner', owner.token], ['an admin', admin.token]] as const) {
    const hardware = (await shown(device, token)).hardware as Json
    t.same(hardware.last_status_message, JSON.parse(unsynced), `${label}: the message as sent`)
    t.match(hardware, { version: '2.1', name: 'SmartCitizen Kit 2.1', type: 'SCK', slug: 'sck:2,1' }, `${label}: hardware from hw_ver`)
  }
  t.equal(((await shown(device, stranger.token)).hardware as Json).last_status_message, '[FILTERED]', 'others: [FILTERED]')
  const checked = await runPython<{ valid: boolean, load: { status_message: string } }>('connector.py', { cmd: 'get', url: `${base}/devices/${device.id}`, model: 'Device' }, { SC_BEARER: owner.token })
  t.equal(checked.load.status_message, 'object', 'the connector reads it as a HardwareStatus (rcause optional)')
  await kit.end()
  // After a power-up the next boot's info (before the ESP synced), then the daily one: each replaces the last.
  const powerUp = E2.replace('"rcause":"SYST"', '"rcause":"POR"').replace('"esp_ver":"0.9.9-910fb56-master","esp_bd":"2026-02-10T11:40:55Z"', '"esp_ver":"not synced","esp_bd":"not synced"')
  for (const [payload, rcause] of [[powerUp, 'POR'], [E2, 'SYST']] as const) {
    const boot = await firmware(device)
    boot.publish(topic(device, 'info'), payload)
    await until(async () => (((await shown(device)).hardware as Json).last_status_message as Json).rcause === rcause, 15_000, `the ${rcause} info`).catch(() => {})
    t.match((await shown(device)).hardware, { version: '2.3', name: 'SmartCitizen Kit 2.3', type: 'SCK', slug: 'sck:2,3', last_status_message: JSON.parse(payload) }, `rcause ${rcause}`)
    boot.drop()
  }
})

t.test('E1: hello during onboarding, as plain text <token>:Hello', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  for (let attempt = 0; attempt < 3; attempt++) kit.publish(topic(device, 'hello'), E1(device.token))
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-07T09:00:00Z,55:1}')
  t.equal((await storedWhen(device, '2026-03-07T09:00:00Z', '2026-03-07T09:00:00Z', 1)).get(55)?.length, 1, 'the connection carries on after three hellos')
  t.notOk(kit.closed)
  await kit.end()
})

t.test('E2: info after the daily 03:00 reset, stored verbatim', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'info'), E2)
  await until(async () => ((await shown(device)).hardware as Json).last_status_message !== null, 15_000, 'the info message').catch(() => {})
  t.same(((await shown(device)).hardware as Json).last_status_message, JSON.parse(E2))
  await kit.end()
})

t.test('E3: a full raw group, the RSSI and PMS ids included', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'readings/raw'), E3)
  const back = await storedWhen(device, '2026-03-02T10:21:00Z', '2026-03-02T10:21:00Z', 19)
  const sent = E3.slice(1, -1).split(',').slice(1).map((pair) => pair.split(':').map(Number) as [number, number])
  t.same([...back.entries()].map(([id, pairs]) => [id, pairs[0]?.[1]]).sort((a, b) => Number(a[0]) - Number(b[0])), sent.sort((a, b) => a[0] - b[0]), 'each of the 19 values, as sent')
  const body = await shown(device)
  t.equal(sensorValue(body, 220), -67, 'RSSI')
  t.equal(sensorValue(body, 165), 1023, 'a PMS particle count')
  await kit.end()
})

t.test('E4: a backlog burst of three messages, oldest first, no battery fitted', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  for (const payload of E4) kit.publish(topic(device, 'readings/raw'), payload)
  const back = await storedWhen(device, '2026-03-01T22:14:00Z', '2026-03-01T22:16:00Z', 9 + 9 + 10)
  t.equal(count(back), 28, 'every value of the three messages')
  t.same(back.get(10)?.map(([, v]) => v), [-1, -1, -1], 'the battery reads -1')
  const body = await shown(device)
  t.equal(body.last_reading_at, '2026-03-01T22:16:00Z')
  t.equal(sensorValue(body, 10), -1, 'the web hides a battery of -1')
  await kit.end()
})

t.test('E5: JSON readings with a batch of two entries', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'readings'), E5)
  const back = await storedWhen(device, '2019-11-05T08:00:00Z', '2019-11-05T08:01:00Z', 4)
  t.same(back.get(55), [['2019-11-05T08:00:00Z', 23.41], ['2019-11-05T08:01:00Z', 23.45]])
  t.same(back.get(10), [['2019-11-05T08:00:00Z', 87]])
  t.same(back.get(56), [['2019-11-05T08:00:00Z', 48.72]])
  await kit.end()
})

t.test('E6: a third-party raw client sending one sensor at a time', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  kit.publish(topic(device, 'readings/raw'), E6)
  kit.publish(topic(device, 'readings/raw'), '{t:2026-03-02T10:25:14Z,55:123.45}')
  const back = await storedWhen(device, '2026-03-02T10:25:00Z', '2026-03-02T10:26:00Z', 1)
  t.same(back.get(55), [['2026-03-02T10:25:14Z', 123.45]], 'one sensor, one message, stored')
  const known = (await call(`${base}/sensors/91`)).status === 200
  if (known) t.same((await storedWhen(device, '2026-03-02T10:25:13Z', '2026-03-02T10:25:13Z', 1)).get(91), [['2026-03-02T10:25:13Z', 123.45]], 'E6 as given: sensor 91')
  else t.notOk(back.has(91), 'sensor 91 is not in this catalogue: E6 as given stores nothing, and the connection carries on')
  t.notOk(kit.closed)
  await kit.end()
})

t.test('§1.3.1 parser edge cases replayed over MQTT: accepted forms stored, garbage rejected without a crash', async (t) => {
  const device = await addDevice(platform, owner)
  const kit = await firmware(device)
  const at = '2024-09-25T13:19:38Z'
  const cases: Array<[string, string | Buffer]> = [
    ['empty', '{}'],
    ['timestamp only', `{t:${at}}`],
    ['t not first', `{100:-2000.12345,t:${at},21:12345.23450}`],
    ['spaces', '{t:2024-09-25T13:19:39Z, 100 : -2000.5}'],
    ['null value', '{t:2024-09-25T13:19:40Z,21:null}'],
    ['non-ASCII bytes', Buffer.concat([Buffer.from('{t:2024-09-25T13:19:41Z,'), Buffer.from('\u00e9\u200b', 'utf8'), Buffer.from('55:21.5}')])]
  ]
  const garbage: Array<string | Buffer> = ['garbage', '{t:2024-09-25', '{55:1', '{t:2024-09-25T13:19:42Z,55:abc}', Buffer.from([0xff, 0xfe, 0x00, 0x7b]), '}{', '{t:2024-09-25T13:19:43Z,,55:1']
  for (const [, payload] of cases) kit.publish(topic(device, 'readings/raw'), payload)
  for (const payload of garbage) kit.publish(topic(device, 'readings/raw'), payload)
  // After all of it, on the same connection: the broker still reads this one.
  await kit.publishQos1(topic(device, 'readings/raw'), '{t:2024-09-25T13:20:00Z,55:99}', 3)
  const back = await storedWhen(device, '2024-09-25T13:00:00Z', '2024-09-25T14:00:00Z', 5)
  t.same(back.get(100), [['2024-09-25T13:19:38Z', -2000.12345], ['2024-09-25T13:19:39Z', -2000.5]], 't not first; spaces around key and value')
  t.same(back.get(21), [['2024-09-25T13:19:38Z', 12345.2345]], 'the null of 13:19:40 is dropped')
  t.same(back.get(55), [['2024-09-25T13:19:41Z', 21.5], ['2024-09-25T13:20:00Z', 99]], 'non-ASCII bytes removed before parsing; garbage stored nothing')
  t.equal(count(back), 5, 'nothing else')
  t.notOk(kit.closed, 'the connection survived the garbage')
  await kit.end()
  const again = await firmware(device)
  t.notOk(again.closed, 'and the broker takes new connections')
  await again.end()
})

t.test('rule 39: hello is accepted for a token no device holds yet', async (t) => {
  // Platform tokens are 6 of [a-z0-9] from a CSPRNG: this one names no device of this fresh database.
  const token = 'ab12cd'
  const { kit, returnCode } = await RawMqtt.connect(mqttPort, { clientId: token, keepAlive: 120 })
  t.equal(returnCode, 0, 'CONNACK 0 for an unregistered token')
  kit.publish(`device/sck/${token}/hello`, E1(token))
  await kit.publishQos1(`device/sck/${token}/hello`, E1(token), 9)
  t.pass('the QoS 1 hello is acknowledged')
  await kit.ping()
  t.notOk(kit.closed, 'the connection stays open')
  await kit.end()
})
