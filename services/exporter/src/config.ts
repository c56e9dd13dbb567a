import { Type } from '@sinclair/typebox'
import { DbConfig, HttpConfig, LogConfig } from '@esp/config'

export const ExporterConfig = Type.Composite([DbConfig, HttpConfig, LogConfig])
