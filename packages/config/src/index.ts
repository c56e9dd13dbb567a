export { loadConfig, explicitKeys, fromEnvironment, ConfigError } from './load.js'
export { DbConfig, HttpConfig, MqttConfig, LogConfig } from './fragments.js'
