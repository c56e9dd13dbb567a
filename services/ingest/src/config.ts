import { type Static, Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, HttpConfig, LogConfig, MqttConfig, RateLimitConfig, ReadingsConfig } from '@esp/config'
import type { Database } from '@esp/db'
import type { IngestDeps } from './app.js'

export const IngestConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, MqttConfig, ReadingsConfig, LogConfig])

type IngestSettings = Pick<Static<typeof IngestConfig>, 'MQTT_HOST' | 'MQTT_PORT' | 'MQTT_BROKER_URL' | 'MQTT_CLIENT_ID' | 'MQTT_SHARED_GROUP' |
'MQTT_CONNECTIONS' | 'BROKER_AMQP_URLS' | 'BROKER_QUEUE' | 'BROKER_PREFETCH' | 'BROKER_DEVICE_USER' | 'BROKER_AUTH_HOST' | 'BROKER_AUTH_PORT' | 'BROKER_AUTH_SECRET' | 'READINGS_MAX_VALUES' | 'READINGS_MAX_FUTURE_SECONDS' | 'BODY_LIMIT_BYTES'>

export function ingestDeps (config: IngestSettings, database: Database, explicit: ReadonlySet<string>): IngestDeps {
  if (config.BROKER_AMQP_URLS !== undefined && config.MQTT_BROKER_URL !== undefined) {
    throw new Error('BROKER_AMQP_URLS and MQTT_BROKER_URL: set one, not both (docs/deployment.md, "MQTT modes")')
  }
  return {
    database,
    mqtt: { host: config.MQTT_HOST, port: config.MQTT_PORT, explicit: explicit.has('MQTT_PORT') },
    externalBroker: config.MQTT_BROKER_URL === undefined
      ? undefined
      : { url: config.MQTT_BROKER_URL, clientId: config.MQTT_CLIENT_ID, group: config.MQTT_SHARED_GROUP, connections: config.MQTT_CONNECTIONS },
    brokerCluster: config.BROKER_AMQP_URLS === undefined
      ? undefined
      : {
          urls: config.BROKER_AMQP_URLS.split(','),
          queue: config.BROKER_QUEUE,
          prefetch: config.BROKER_PREFETCH,
          deviceUser: config.BROKER_DEVICE_USER,
          auth: { host: config.BROKER_AUTH_HOST, port: config.BROKER_AUTH_PORT, secret: config.BROKER_AUTH_SECRET }
        },
    maxValues: config.READINGS_MAX_VALUES,
    maxFutureSeconds: config.READINGS_MAX_FUTURE_SECONDS,
    maxPayloadBytes: config.BODY_LIMIT_BYTES
  }
}
