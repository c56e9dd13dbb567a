import { Type } from '@sinclair/typebox'
import { AuthConfig, DbConfig, HttpConfig, LogConfig, RateLimitConfig, MqttConfig } from '@esp/config'

export const IngestConfig = Type.Composite([DbConfig, HttpConfig, AuthConfig, RateLimitConfig, MqttConfig, LogConfig])
