import net from 'node:net'
import { Aedes } from 'aedes'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { listenWithFallback } from '@esp/http'

export interface MqttListenOptions {
  host: string
  port: number
  /** a busy port set explicitly is an error; a busy default falls back to a free one */
  explicit: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    broker: Aedes
    /** the MQTT port taken, once listening */
    mqttListening: { host: string, port: number, fellBack: boolean } | undefined
  }
}

/**
 * The embedded Aedes broker (DESIGN.md: ingest). Until device topics are handled, every publish and
 * subscription is refused: a device must never believe a reading was delivered that nothing stores.
 */
export const brokerPlugin = fp(async (app: FastifyInstance, options: { listen?: MqttListenOptions | undefined }) => {
  const broker = await Aedes.createBroker()
  broker.authorizePublish = (_client, _packet, callback) => { callback(new Error('publishing is not accepted yet')) }
  broker.authorizeSubscribe = (_client, _subscription, callback) => { callback(new Error('subscribing is not accepted yet'), null) }
  const tcp = net.createServer(broker.handle)
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

  app.addHook('onClose', async () => {
    await new Promise<void>((resolve) => { broker.close(() => { resolve() }) })
    if (tcp.listening) await new Promise<void>((resolve) => { tcp.close(() => { resolve() }) })
  })
}, { name: 'esp-broker' })

/** The launcher's line for the MQTT address. */
export function mqttAddressLine (app: FastifyInstance, configuredPort: number): string {
  const listening = app.mqttListening
  if (listening === undefined) return '  MQTT      not listening'
  return `  MQTT      mqtt://${listening.host}:${listening.port}${listening.fellBack ? `   (port ${configuredPort} was busy)` : ''}`
}
