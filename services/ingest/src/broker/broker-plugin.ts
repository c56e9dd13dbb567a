import net from 'node:net'
import { Aedes } from 'aedes'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { createWebSocketStream, WebSocketServer } from 'ws'
import { listenWithFallback } from '@esp/http'
import { type AccessDeps, installAccess } from './access.js'
import type { SubscriberIndex } from './live-feed.js'
import { brokerShutdown } from './shutdown.js'

export interface MqttListenOptions {
  host: string
  port: number
  /** a busy port set explicitly is an error; a busy default falls back to a free one */
  explicit: boolean
}

/** Where browsers reach the broker over WebSocket, on the HTTP server (issue #6 §1). */
export const MQTT_WEBSOCKET_PATH = '/mqtt'

declare module 'fastify' {
  interface FastifyInstance {
    broker: Aedes
    /** the MQTT port taken, once listening */
    mqttListening: { host: string, port: number, fellBack: boolean } | undefined
  }
}

export interface BrokerPluginOptions {
  listen?: MqttListenOptions | undefined
  /** kept up to date with the clients' live and forwarding subscriptions */
  subscribers?: SubscriberIndex | undefined
  access: Omit<AccessDeps, 'log'>
}

/**
 * The embedded Aedes broker (DESIGN.md: ingest): MQTT over TCP on MQTT_PORT and over WebSocket at
 * /mqtt on the HTTP server, with the device policy of access.ts.
 */
export const brokerPlugin = fp(async (app: FastifyInstance, options: BrokerPluginOptions) => {
  // Client ids are device tokens (6 characters) or a library's random id; third-party sketches
  // use longer ones than MQTT 3.1.1's minimum guarantee of 23.
  const broker = await Aedes.createBroker({ maxClientsIdLength: 128 })
  const log = app.log.child({ component: 'mqtt' })
  installAccess(broker, { ...options.access, log })
  const stats = options.access.messages.stats
  broker.on('client', () => { stats.connections++ })
  broker.on('clientDisconnect', (client) => {
    stats.connections--
    options.subscribers?.disconnected(client)
  })
  // A refused filter comes with the failure code 128 (outside aedes' QoS type) and holds nothing.
  broker.on('subscribe', (subscriptions, client) => { options.subscribers?.subscribed(client, subscriptions.filter((s) => (s.qos as number) !== 128).map((s) => s.topic)) })
  broker.on('unsubscribe', (filters, client) => { options.subscribers?.unsubscribed(client, filters) })
  broker.on('clientError', (_client, err) => { log.debug({ err }, 'mqtt client error') })
  broker.on('connectionError', (_client, err) => { log.debug({ err }, 'mqtt connection error') })

  const shutdown = brokerShutdown(broker, { drain: async () => { await options.access.messages.ingest.drain() } })
  const tcp = net.createServer((socket) => { shutdown.handle(socket) })
  const websockets = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 })
  app.server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?')[0]
    if (path !== MQTT_WEBSOCKET_PATH) { socket.destroy(); return }
    websockets.handleUpgrade(request, socket, head, (ws) => {
      const stream = createWebSocketStream(ws)
      stream.on('error', () => { ws.terminate() })
      shutdown.handle(stream, request)
    })
  })
  app.decorate('broker', broker)
  app.decorate('mqttListening', undefined)

  const listen = options.listen
  if (listen !== undefined) {
    app.addHook('onReady', async () => {
      const { port, fellBack } = await listenWithFallback(async (p) => await new Promise<number>((resolve, reject) => {
        const onError = (err: Error): void => { reject(err) }
        tcp.once('error', onError)
        tcp.listen(p, listen.host, () => {
          tcp.off('error', onError)
          const address = tcp.address()
          resolve(typeof address === 'object' && address !== null ? address.port : p)
        })
      }), { port: listen.port, explicit: listen.explicit, name: 'MQTT', key: 'MQTT_PORT' })
      app.mqttListening = { host: listen.host, port, fellBack }
    })
  }

  // The stop begins with the server's close, beside the HTTP side's: the HTTP listener's close
  // waits for the WebSocket connections, which only the broker's stop ends. It is awaited in
  // onClose, before the pools close, so every PUBLISH taken is committed and acknowledged first.
  let stopped: Promise<void> | undefined
  const stop = async (): Promise<void> => {
    if (tcp.listening) tcp.close()
    websockets.close()
    await shutdown.stop()
  }
  app.addHook('preClose', async () => {
    stopped = stop()
    // Marked handled now; onClose awaits it and sees a failure.
    stopped.catch(() => {})
  })
  app.addHook('onClose', async () => { await (stopped ?? stop()) })
}, { name: 'esp-broker' })

/** The launcher's line for the MQTT address. */
export function mqttAddressLine (app: FastifyInstance, configuredPort: number): string {
  if (app.hasDecorator('mqttExternal')) return '  MQTT      external broker (MQTT_BROKER_URL)'
  if (app.hasDecorator('brokerCluster')) {
    const auth = app.hasDecorator('brokerAuthListening') ? app.brokerAuthListening : undefined
    return `  MQTT      broker cluster (BROKER_AMQP_URLS), consuming through ${app.brokerCluster.node() ?? 'no node yet'}` +
      (auth === undefined ? '' : `\n  broker auth  http://${auth.host.includes(':') ? `[${auth.host}]` : auth.host}:${auth.port}/broker/auth (for the cluster's nodes only)`)
  }
  const listening = app.mqttListening
  if (listening === undefined) return '  MQTT      not listening'
  return `  MQTT      mqtt://${listening.host}:${listening.port}${listening.fellBack ? `   (port ${configuredPort} was busy)` : ''}`
}
