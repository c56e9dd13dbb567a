import mqtt, { type MqttClient } from 'mqtt'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type DeviceMessageDeps, handleDeviceMessage } from './device-messages.js'
import { DEVICE_TOPIC_FILTERS, parseDeviceTopic } from './topics.js'
import type { Publish } from './live-feed.js'

export interface ExternalBrokerOptions {
  url: string
  /** stable per instance: the broker keeps unacknowledged messages in this session across reconnects */
  clientId: string
  /** the shared subscription group that instances split the devices' messages in */
  group: string
  /** subscriber connections per instance; each handles one message at a time (mqtt.js) */
  connections: number
  messages: Omit<DeviceMessageDeps, 'log'>
}

declare module 'fastify' {
  interface FastifyInstance {
    /** set when ingest reads devices from an external broker instead of embedding one */
    mqttExternal: { publish: Publish, clients: MqttClient[] }
  }
}

/**
 * Scale-out mode (issue #6 §6; DESIGN.md): with MQTT_BROKER_URL, ingest embeds no broker but
 * subscribes to the external one with shared subscriptions (`$share/<group>/…`), so every device
 * message goes to exactly one instance of the group. Sessions are persistent (clean: false) and the
 * PUBACK is sent only after the commit; when the database fails, the connection is dropped without
 * it, and the broker delivers the message again when the session resumes.
 */
export const externalBrokerPlugin = fp(async (app: FastifyInstance, options: ExternalBrokerOptions) => {
  const log = app.log.child({ component: 'mqtt' })
  const deps: DeviceMessageDeps = { ...options.messages, log }
  const filters = DEVICE_TOPIC_FILTERS.map((filter) => `$share/${options.group}/${filter}`)
  let inFlight = 0
  let lastMessageAt = 0
  const clients = Array.from({ length: options.connections }, (_, i) => {
    const client = mqtt.connect(options.url, {
      clientId: `${options.clientId}-${i}`,
      clean: false,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
      // Subscribed again on every connect, below. mqtt.js's own resubscription skips a session the
      // broker says it kept, and then its subscribe() skips topics it thinks it has: but Mosquitto
      // 2.0 restores a persistent session after a restart without its shared subscriptions, so
      // the instance would stay connected and receive nothing (test/e2e/broker-outage.test.ts).
      resubscribe: false,
      // Live readings go out at QoS 0 through this client; while the broker is away they are
      // dropped, not queued in memory for as long as the outage lasts.
      queueQoSZero: false
    })
    client.handleMessage = (packet, done) => {
      lastMessageAt = Date.now()
      const topic = parseDeviceTopic(packet.topic)
      if (topic === null) { done(); return }
      const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload
      inFlight++
      handleDeviceMessage(deps, topic, payload).finally(() => { inFlight-- }).then(() => { done() }, (err: unknown) => {
        log.warn({ err }, 'mqtt message not stored; reconnecting so the broker delivers it again')
        done(err instanceof Error ? err : new Error('not stored'))
        client.stream.destroy()
      })
    }
    client.on('connect', () => {
      // Every connect, whether or not the broker says it kept the session: subscribing again is
      // harmless, and a lost subscription would be silent.
      client.subscribe(filters, { qos: 1 }, (err) => { if (err !== null && err !== undefined) log.error({ err }, 'mqtt subscription failed') })
    })
    client.on('error', (err) => { log.warn({ err }, 'mqtt broker connection error') })
    return client
  })
  await Promise.all(clients.map(async (client) => await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`MQTT_BROKER_URL: no connection to ${new URL(options.url).host} within 10 s`)) }, 10_000)
    client.once('connect', () => { clearTimeout(timer); resolve() })
  }))).catch(async (err: unknown) => {
    await Promise.all(clients.map(async (client) => await client.endAsync(true)))
    throw err
  })

  const publisher = clients[0]
  const publish: Publish = (topic, payload) => { publisher?.publish(topic, payload, { qos: 0, retain: false }) }
  app.decorate('mqttExternal', { publish, clients })
  app.addHook('onClose', async () => {
    // Leave the group first, so the broker sends the other instances what comes next; then take
    // and acknowledge what it had already sent here, and only then disconnect, so nothing waits
    // in this instance's session for a return that a scaled-down replica never makes.
    await Promise.all(clients.map(async (client) => { await client.unsubscribeAsync(filters).catch(() => {}) }))
    const deadline = Date.now() + 10_000
    // inFlight and lastMessageAt move while this waits: the handlers run between the timers.
    const settling = (): boolean => inFlight > 0 || Date.now() - lastMessageAt < 300
    while (settling() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    await options.messages.ingest.drain()
    await Promise.all(clients.map(async (client) => await client.endAsync()))
  })
}, { name: 'esp-broker-external' })
