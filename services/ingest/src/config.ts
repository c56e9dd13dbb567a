import { Type } from '@sinclair/typebox'
import { DbConfig, HttpConfig, LogConfig, MqttConfig } from '@esp/config'

export const IngestConfig = Type.Composite([DbConfig, HttpConfig, MqttConfig, LogConfig])
