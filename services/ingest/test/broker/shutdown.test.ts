import net from 'node:net'
import t from 'tap'
import type { MqttClient } from 'mqtt'
import { signUp } from '@esp/test-helpers/api'
import { connectMqtt, until } from '@esp/test-helpers/mqtt'
import { buildPlatform } from '@esp/test-helpers/platform'
import { makeDevice } from '@esp/db/testing'

const reading = (at: string, value: number): string => JSON.stringify({ data: [{ recorded_at: at, sensors: [{ id: 55, value }] }] })

/** Publishes at QoS 1; the promise says whether a PUBACK came before the connection closed. */
async function acknowledged (client: MqttClient, topic: string, payload: string): Promise<boolean> {
  return await new Promise((resolve) => {
    client.once('close', () => { resolve(false) })
    client.publish(topic, payload, { qos: 1 }, (err) => { resolve(err === undefined || err === null) })
  })
}

/** True once the port refuses connections. */
async function refused (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => { resolve(true) })
  })
}

t.test('close: a PUBLISH taken before it is stored and acknowledged; one sent after it is never read, over TCP and WebSocket', async (t) => {
  const { app, database } = await buildPlatform(t, { mqtt: true })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const httpPort = typeof address === 'object' && address !== null ? address.port : 0
  const mqttPort = app.mqttListening?.port ?? 0
  const owner = await signUp(app)
  const kits = await Promise.all(['tcp', 'ws'].map(async (transport, i) => {
    const token = `5d0${i}aa`
    const { id } = await makeDevice(database, { ownerId: owner.id, token })
    const url = transport === 'tcp' ? `mqtt://127.0.0.1:${mqttPort}` : `ws://127.0.0.1:${httpPort}/mqtt`
    return { id, token, transport, client: await connectMqtt(t, url, { clientId: token }) }
  }))

  // The commit of what is in flight waits on this lock, so the stop is caught while it drains.
  let release = (): void => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  let markLocked = (): void => {}
  const locked = new Promise<void>((resolve) => { markLocked = resolve })
  const holder = database.sql.begin(async (tx) => {
    await tx`lock table readings in exclusive mode`
    markLocked()
    await released
  })
  await locked

  const before = kits.map(async (kit) => await acknowledged(kit.client, `device/sck/${kit.token}/readings`, reading('2026-01-01T00:00:00Z', 1)))
  await until(() => app.mqttIngest.pending === kits.length, 5000, 'both PUBLISHes taken by the broker')
  const closing = app.close()
  await until(async () => await refused(mqttPort), 5000, 'the MQTT listener closed')
  const after = kits.map(async (kit) => await acknowledged(kit.client, `device/sck/${kit.token}/readings`, reading('2026-01-01T00:01:00Z', 2)))
  // Time for the second PUBLISH to arrive; a broker still reading would take it now.
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(app.mqttIngest.pending, kits.length, 'nothing more was taken after the stop began')
  release()
  await holder
  await closing

  t.same(await Promise.all(before), [true, true], 'the PUBLISHes in flight at the stop were acknowledged')
  t.same(await Promise.all(after), [false, false], 'the PUBLISHes sent after it were not')
  for (const kit of kits) {
    const rows = await database.sql<{ value: number }[]>`select value from readings where device_id = ${kit.id}`
    t.same(rows.map((row) => Number(row.value)), [1], `${kit.transport}: only the acknowledged reading is stored`)
    t.notOk(kit.client.connected, `${kit.transport}: the broker closed the connection`)
  }
})
