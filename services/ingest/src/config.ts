import { type Static, Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, HttpConfig, LogConfig, MqttConfig, RateLimitConfig, ReadingsConfig } from '@esp/config'
import type { Database } from '@esp/db'
import type { IngestDeps } from './app.js'

export const IngestConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, MqttConfig, ReadingsConfig, LogConfig])

type IngestSettings = Pick<Static<typeof IngestConfig>, 'MQTT_HOST' | 'MQTT_PORT' | 'MQTT_BROKER_URL' | 'MQTT_CLIENT_ID' | 'MQTT_SHARED_GROUP' |
'MQTT_CONNECTIONS' | 'READINGS_MAX_VALUES' | 'READINGS_MAX_FUTURE_SECONDS' | 'BODY_LIMIT_BYTES'>

export function ingestDeps (config: IngestSettings, database: Database, explicit: ReadonlySet<string>): IngestDeps {
  return {
    database,
    mqtt: { host: config.MQTT_HOST, port: config.MQTT_PORT, explicit: explicit.has('MQTT_PORT') },
    externalBroker: config.MQTT_BROKER_URL === undefined
      ? undefined
      : { url: config.MQTT_BROKER_URL, clientId: config.MQTT_CLIENT_ID, group: config.MQTT_SHARED_GROUP, connections: config.MQTT_CONNECTIONS },
    maxValues: config.READINGS_MAX_VALUES,
    maxFutureSeconds: config.READINGS_MAX_FUTURE_SECONDS,
    maxPayloadBytes: config.BODY_LIMIT_BYTES
  }
}
