export { ingestService, type IngestDeps } from './app.js'
export { IngestConfig, ingestDeps } from './config.js'
export { mqttAddressLine, type MqttListenOptions } from './broker/broker-plugin.js'
