export { loadConfig, explicitKeys, fromEnvironment, ConfigError } from './load.js'
export { DbConfig, HttpConfig, MqttConfig, LogConfig, AuthConfig, RateLimitConfig, MailConfig, UploadConfig, ReadingsConfig, ExportConfig, ExplorerConfig } from './fragments.js'
