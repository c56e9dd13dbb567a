import { type Static, Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, HttpConfig, LogConfig, MqttConfig, RateLimitConfig, ReadingsConfig } from '@esp/config'
import type { Database } from '@esp/db'
import type { IngestDeps } from './app.js'

export const IngestConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, MqttConfig, ReadingsConfig, LogConfig])

export function ingestDeps (config: Pick<Static<typeof IngestConfig>, 'MQTT_HOST' | 'MQTT_PORT' | 'READINGS_MAX_VALUES' | 'READINGS_MAX_FUTURE_SECONDS'>, database: Database, explicit: ReadonlySet<string>): IngestDeps {
  return {
    database,
    mqtt: { host: config.MQTT_HOST, port: config.MQTT_PORT, explicit: explicit.has('MQTT_PORT') },
    maxValues: config.READINGS_MAX_VALUES,
    maxFutureSeconds: config.READINGS_MAX_FUTURE_SECONDS
  }
}
