import { hostname } from 'node:os'
import amqp, { type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { type DeviceMessageDeps, handleDeviceMessage } from './device-messages.js'
import type { Publish } from './live-feed.js'
import { DEVICE_ROUTING_PATTERNS, parseDeviceTopic, routingKeyOf, topicOfRoutingKey } from './topics.js'

export interface ClusterBrokerOptions {
  /** AMQP URLs of the cluster's nodes, tried in turn */
  urls: readonly string[]
  /** the replicated queue every ingest instance consumes */
  queue: string
  /** unacknowledged messages per instance: what the write batches are made of */
  prefetch: number
  messages: Omit<DeviceMessageDeps, 'log'>
  /** pause before a message the database could not take is given back (tests shorten it) */
  retryMs?: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /** set when ingest consumes the device messages of a clustered broker (BROKER_AMQP_URLS) */
    brokerCluster: { publish: Publish, connected: () => boolean, node: () => string | undefined }
  }
}

const TOPIC_EXCHANGE = 'amq.topic'

/**
 * Clustered mode (issue 24; DESIGN.md "past one box"): devices speak MQTT to a RabbitMQ cluster,
 * whose MQTT plugin routes their messages through `amq.topic` into one quorum queue, replicated on
 * the cluster's nodes, that every ingest instance consumes. The broker sends a device's PUBACK
 * once the queue has confirmed the message, so once a majority of the nodes hold it. A message is
 * acknowledged here only after its readings are committed: when an instance dies, the queue gives
 * its unacknowledged messages to another, and the idempotent write stores each once.
 */
export const clusterBrokerPlugin = fp(async (app: FastifyInstance, options: ClusterBrokerOptions) => {
  const log = app.log.child({ component: 'broker' })
  const deps: DeviceMessageDeps = { ...options.messages, log }
  const retryMs = options.retryMs ?? 1000
  let connection: ChannelModel | undefined
  let publisher: Channel | undefined
  let nodeUrl: string | undefined
  let next = 0
  let closing = false
  let reconnecting: Promise<void> | undefined
  let consumer: { channel: Channel, tag: string } | undefined
  let inFlight = 0

  const acknowledge = (channel: Channel, msg: ConsumeMessage, stored: boolean): void => {
    // A closed channel's messages are back in the queue already: another delivery stores them once.
    try {
      if (stored) channel.ack(msg)
      else channel.nack(msg, false, true)
    } catch {}
  }

  const onMessage = (channel: Channel, msg: ConsumeMessage | null): void => {
    // null: the broker cancelled the consumer (its queue's node went away); consume afresh.
    if (msg === null) { void reconnect('the broker cancelled the consumer'); return }
    const topic = parseDeviceTopic(topicOfRoutingKey(msg.fields.routingKey))
    if (topic === null) { acknowledge(channel, msg, true); return }
    inFlight++
    handleDeviceMessage(deps, topic, msg.content).finally(() => { inFlight-- }).then(() => { acknowledge(channel, msg, true) }, (err: unknown) => {
      log.warn({ err }, 'broker message not stored; it goes back to the queue')
      // Held for a moment first, so a database outage does not send the message round the cluster.
      setTimeout(() => { acknowledge(channel, msg, false) }, retryMs).unref()
    })
  }

  const open = async (url: string): Promise<void> => {
    const conn = await amqp.connect(url, { clientProperties: { connection_name: `esp-ingest ${hostname()} ${process.pid}` }, heartbeat: 5 })
    try {
      const channel = await conn.createChannel()
      // Declared by every instance on every connect: the same arguments make it a no-op.
      await channel.assertQueue(options.queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } })
      for (const pattern of DEVICE_ROUTING_PATTERNS) await channel.bindQueue(options.queue, TOPIC_EXCHANGE, pattern)
      await channel.prefetch(options.prefetch)
      const { consumerTag } = await channel.consume(options.queue, (msg) => { onMessage(channel, msg) }, { noAck: false })
      publisher = await conn.createChannel()
      consumer = { channel, tag: consumerTag }
    } catch (err) {
      await conn.close().catch(() => {})
      throw err
    }
    conn.on('error', (err: unknown) => { log.warn({ err }, 'broker connection error') })
    conn.on('close', () => {
      if (connection !== conn) return
      connection = undefined
      publisher = undefined
      consumer = undefined
      if (!closing) void reconnect('the broker connection closed')
    })
    connection = conn
    nodeUrl = url
  }

  /** The next node that answers, in turn; every node is tried before a pause. */
  const connectAny = async (deadline: number): Promise<void> => {
    let pause = 100
    for (;;) {
      for (let tried = 0; tried < options.urls.length; tried++) {
        const url = options.urls[next++ % options.urls.length] ?? ''
        try {
          await open(url)
          return
        } catch (err) {
          log.warn({ err, node: new URL(url).host }, 'broker node unavailable')
        }
        if (closing) return
      }
      if (Date.now() > deadline) throw new Error(`BROKER_AMQP_URLS: no node of ${options.urls.map((u) => new URL(u).host).join(', ')} answered`)
      await new Promise((resolve) => setTimeout(resolve, pause))
      pause = Math.min(pause * 2, 2000)
    }
  }

  const reconnect = async (why: string): Promise<void> => {
    if (closing || reconnecting !== undefined) return await reconnecting
    log.warn({ reason: why }, 'reconnecting to the broker cluster')
    reconnecting = (async () => {
      const old = connection
      connection = undefined
      await old?.close().catch(() => {})
      await connectAny(Number.POSITIVE_INFINITY).catch((err: unknown) => { log.error({ err }, 'broker reconnection failed') })
      if (connection !== undefined) log.info({ node: nodeUrl === undefined ? undefined : new URL(nodeUrl).host }, 'connected to the broker cluster')
    })().finally(() => { reconnecting = undefined })
    await reconnecting
  }

  await connectAny(Date.now() + 10_000)

  const publish: Publish = (topic, payload) => {
    // Live readings are QoS 0: while no node is connected they are dropped, not queued.
    try { publisher?.publish(TOPIC_EXCHANGE, routingKeyOf(topic), Buffer.from(payload)) } catch {}
  }
  app.decorate('brokerCluster', {
    publish,
    connected: () => connection !== undefined,
    node: () => nodeUrl === undefined ? undefined : new URL(nodeUrl).host
  })
  app.addHook('onClose', async () => {
    closing = true
    // Take no more, store and acknowledge what was taken, then leave: what this instance had not
    // yet received stays in the queue for the others.
    const held = consumer
    if (held !== undefined) await held.channel.cancel(held.tag).catch(() => {})
    const deadline = Date.now() + 10_000
    // inFlight moves while this waits: the handlers run between the timers.
    const settling = (): boolean => inFlight > 0
    while (settling() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    await options.messages.ingest.drain()
    await connection?.close().catch(() => {})
  })
}, { name: 'esp-broker-cluster' })
