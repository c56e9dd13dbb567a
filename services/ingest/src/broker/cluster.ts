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
  const health = options.messages.health
  const retryMs = options.retryMs ?? 1000
  let connection: ChannelModel | undefined
  /** live readings go out on a connection of their own (below) */
  let live: { connection: ChannelModel, channel: Channel, held: boolean } | undefined
  let nodeUrl: string | undefined
  let next = 0
  let closing = false
  let reconnecting: Promise<void> | undefined
  let consumer: { channel: Channel, tag: string | undefined } | undefined
  let resuming: NodeJS.Timeout | undefined
  let inFlight = 0

  const acknowledge = (channel: Channel, msg: ConsumeMessage, stored: boolean): void => {
    // A closed channel's messages are back in the queue already: another delivery stores them once.
    try {
      if (stored) channel.ack(msg)
      else channel.nack(msg, false, true)
    } catch {}
  }

  const consume = async (channel: Channel): Promise<string> =>
    (await channel.consume(options.queue, (msg) => { onMessage(channel, msg) }, { noAck: false })).consumerTag

  /**
   * While the database is away this instance takes nothing: messages stay in the queue (for an
   * instance that can store them, or for this one when the database is back) instead of going
   * round between the broker and a write that fails at once.
   */
  const pause = (): void => {
    const held = consumer
    if (held?.tag === undefined || closing) return
    const tag = held.tag
    held.tag = undefined
    log.warn('the database is unavailable: consuming paused')
    held.channel.cancel(tag).catch(() => {})
    const waitForDatabase = (): void => {
      resuming = setTimeout(() => {
        if (closing || consumer !== held) return
        if (health !== undefined && !health.available) { waitForDatabase(); return }
        consume(held.channel).then((resumed) => {
          held.tag = resumed
          log.info('the database is back: consuming again')
        }, () => { void reconnect('consuming could not resume') })
      }, retryMs)
      resuming.unref()
    }
    waitForDatabase()
  }

  const onMessage = (channel: Channel, msg: ConsumeMessage | null): void => {
    // null: the broker cancelled the consumer (its queue's node went away); consume afresh.
    if (msg === null) { void reconnect('the broker cancelled the consumer'); return }
    const topic = parseDeviceTopic(topicOfRoutingKey(msg.fields.routingKey))
    if (topic === null) { acknowledge(channel, msg, true); return }
    inFlight++
    handleDeviceMessage(deps, topic, msg.content).finally(() => { inFlight-- }).then(() => { acknowledge(channel, msg, true) }, (err: unknown) => {
      if (health !== undefined && !health.available) pause()
      else log.warn({ err }, 'broker message not stored; it goes back to the queue')
      // Held for a moment first, so a failing write does not send the message round the cluster.
      setTimeout(() => { acknowledge(channel, msg, false) }, retryMs).unref()
    })
  }

  /**
   * Live readings are published on a connection of their own: a broker short of memory or disk
   * blocks the connections that publish, and on the consuming one that would also hold back the
   * acknowledgements that let the queue drain. They are QoS 0: dropped while blocked or buffered.
   */
  const openLive = async (url: string): Promise<void> => {
    const conn = await amqp.connect(url, { clientProperties: { connection_name: `esp-ingest live ${hostname()} ${process.pid}` }, heartbeat: 5 })
    conn.on('error', (err: unknown) => { log.warn({ err }, 'broker connection error (live readings)') })
    try {
      const channel = await conn.createChannel()
      channel.on('error', () => {})
      const opened = { connection: conn, channel, held: false }
      conn.on('blocked', () => { opened.held = true })
      conn.on('unblocked', () => { opened.held = false })
      channel.on('drain', () => { opened.held = false })
      conn.on('close', () => { if (live === opened) live = undefined })
      live = opened
    } catch (err) {
      await conn.close().catch(() => {})
      throw err
    }
  }

  const open = async (url: string): Promise<void> => {
    const conn = await amqp.connect(url, { clientProperties: { connection_name: `esp-ingest ${hostname()} ${process.pid}` }, heartbeat: 5 })
    // Listened to at once: an error during the set-up below must not go unheard (a crash).
    conn.on('error', (err: unknown) => { log.warn({ err }, 'broker connection error') })
    try {
      const channel = await conn.createChannel()
      channel.on('error', (err: unknown) => { log.warn({ err }, 'broker channel error') })
      // Declared by every instance on every connect: the same arguments make it a no-op.
      await channel.assertQueue(options.queue, { durable: true, arguments: { 'x-queue-type': 'quorum' } })
      for (const pattern of DEVICE_ROUTING_PATTERNS) await channel.bindQueue(options.queue, TOPIC_EXCHANGE, pattern)
      await channel.prefetch(options.prefetch)
      if (closing) throw new Error('closing')
      consumer = { channel, tag: await consume(channel) }
      await openLive(url).catch((err: unknown) => { log.warn({ err }, 'no connection for live readings') })
    } catch (err) {
      await conn.close().catch(() => {})
      throw err
    }
    conn.on('close', () => {
      if (connection !== conn) return
      connection = undefined
      consumer = undefined
      void live?.connection.close().catch(() => {})
      if (!closing) void reconnect('the broker connection closed')
    })
    connection = conn
    nodeUrl = url
  }

  /** The next node that answers, in turn; every node is tried before a pause. */
  const connectAny = async (deadline: number): Promise<void> => {
    let wait = 100
    for (;;) {
      for (let tried = 0; tried < options.urls.length; tried++) {
        if (closing) return
        const url = options.urls[next++ % options.urls.length] ?? ''
        try {
          await open(url)
          return
        } catch (err) {
          log.warn({ err, node: new URL(url).host }, 'broker node unavailable')
        }
      }
      if (Date.now() > deadline) throw new Error(`BROKER_AMQP_URLS: no node of ${options.urls.map((u) => new URL(u).host).join(', ')} answered`)
      await new Promise((resolve) => setTimeout(resolve, wait))
      wait = Math.min(wait * 2, 2000)
    }
  }

  const reconnect = async (why: string): Promise<void> => {
    if (closing || reconnecting !== undefined) return await reconnecting
    log.warn({ reason: why }, 'reconnecting to the broker cluster')
    reconnecting = (async () => {
      const old = connection
      connection = undefined
      consumer = undefined
      await old?.close().catch(() => {})
      await live?.connection.close().catch(() => {})
      await connectAny(Number.POSITIVE_INFINITY).catch((err: unknown) => { log.error({ err }, 'broker reconnection failed') })
      if (connection !== undefined) log.info({ node: nodeUrl === undefined ? undefined : new URL(nodeUrl).host }, 'connected to the broker cluster')
    })().finally(() => { reconnecting = undefined })
    await reconnecting
  }

  await connectAny(Date.now() + 10_000)

  const publish: Publish = (topic, payload) => {
    const out = live
    if (out === undefined || out.held) return
    try {
      // false: the channel's buffer is full; nothing more until it drains.
      if (!out.channel.publish(TOPIC_EXCHANGE, routingKeyOf(topic), Buffer.from(payload))) out.held = true
    } catch {}
  }
  app.decorate('brokerCluster', {
    publish,
    connected: () => connection !== undefined,
    node: () => nodeUrl === undefined ? undefined : new URL(nodeUrl).host
  })
  app.addHook('onClose', async () => {
    closing = true
    clearTimeout(resuming)
    // A reconnection under way finishes first (it gives up once closing is set), so no
    // connection it opens is left behind.
    await reconnecting
    // Take no more, store and acknowledge what was taken, then leave: what this instance had not
    // yet received stays in the queue for the others.
    const held = consumer
    if (held?.tag !== undefined) await held.channel.cancel(held.tag).catch(() => {})
    const deadline = Date.now() + 10_000
    // inFlight moves while this waits: the handlers run between the timers.
    const settling = (): boolean => inFlight > 0
    while (settling() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    await options.messages.ingest.drain()
    await live?.connection.close().catch(() => {})
    await connection?.close().catch(() => {})
  })
}, { name: 'esp-broker-cluster' })
