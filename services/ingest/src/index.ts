export { ingestService, OLDEST_READING, type IngestDeps } from './app.js'
export { IngestConfig, ingestDeps } from './config.js'
export { mqttAddressLine, type MqttListenOptions } from './broker/broker-plugin.js'
