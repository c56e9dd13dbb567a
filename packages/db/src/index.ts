export * as schema from './schema/index.js'
export * from './schema/index.js'
export { createDatabase, inTransaction, POOL_GATE, type PoolGate, type Database, type DatabaseOptions, type Handle, type Db, type Executor, type Sql, type Transaction } from './client.js'
export { startEmbeddedPostgres, ensureDatabase, dropDatabase, postgresUserIds, embeddedDatabaseStatus, type EmbeddedServer, type EmbeddedStatus, type RestartPolicy } from './embedded.js'
export { migrateDatabase, migrationStatus, expectedMigrationCount, migrationsFolder } from './migrate.js'
export { seedCatalogue } from './seed.js'
export { freePort, portIsFree } from './free-port.js'
export { concurrencyLimit, type ConcurrencyLimit } from './concurrency.js'
export { CHANGES_CHANNEL, ChangeFeed, notifyChange, type ChangePayload, type ChangeSubscriber } from './changes.js'
export { copyOut, type CopyOut } from './copy-out.js'
export { CopyRows, RowBatch } from './copy-rows.js'
export { PgCode, pgError, isPgCode, isDatabaseUnavailable, databaseUnavailableReason, databaseUnavailability, type Unavailability } from './pg-errors.js'
export { defaultKitId } from './seed/catalogue-data.js'
export { openPlatformDatabase, type PlatformDatabase, type PlatformDatabaseOptions } from './bootstrap.js'
export * from './timeseries/index.js'
export { COPY_BINARY_HEADER, COPY_BINARY_SIGNATURE, PG_EPOCH_MS, TWO_32, timestampMsAt } from './copy-binary.js'
export {
  readDevice, readDevices, readDevicesOfOwners, readUserWithDevices, readDevicePage,
  type ComponentRecord, type DeviceReads, type DeviceReadRow, type LatestRecord, type ReadScope, type UserRecord
} from './queries/devices.js'
export {
  activeDeviceRow, deviceAccessById, deviceAccessByTokens, legacyAddRow, tagsNamed, kitExists, insertDevice, takeOverMac, replaceDeviceTags, upsertPostprocessing,
  addKitComponents, updateDeviceRow, setDeviceToken, archiveDeviceRow, lockDeviceRow, macAddressTaken,
  type DeviceAccessRow, type DeviceRow, type DeviceValues, type LegacyAddRow, type PostprocessingValues
} from './queries/device-rows.js'
export { deviceFilters, listDeviceStamps, type DeviceListOptions } from './queries/device-list.js'
export { worldMapFingerprint, worldMapRows, type WorldMapDeviceRow, type WorldMapLatestRow } from './queries/world-map.js'
export { deviceStamps, devicePageStamps, userStamps, type DeviceStampRow, type RevisionStamp, type Stamped, type UserStamp, type UserStampRequest } from './queries/revisions.js'
export { searchHits, searchTotal, type SearchHit, type SearchTerms } from './queries/search.js'
export { mergeIngestStatus, MAX_UNKNOWN_SENSORS, type IngestRejection, type IngestStatusDelta, type IngestStatusRecord } from './queries/ingest-status.js'
export {
  loadCatalogue, generationsReader, poolOf, measurementFilters, sensorFilters, kitFilters, tagFilters, tagSensorFilters, listMeasurements, listSensors, listKits, listTags,
  listTagSensors, measurementById, sensorById, kitById, tagSensorById, findTagRow, measurementExists, sensorExists, insertSensor, updateSensor, insertMeasurement,
  updateMeasurement, tagNameTaken, insertTag, updateTag, deleteTagRow, insertTagSensor, updateTagSensor, deleteTagSensorRow,
  type CatalogueRows, type Generations, type MeasurementRow, type SensorRow, type KitRow, type TagRow, type TagSensorRow
} from './queries/catalogue.js'
export { withDeadline } from './deadline.js'
export { trimOldest } from './bounded.js'
export { ReadReplicas, parseLsn, databaseAddress, readUrls, type Replica, type ReplicaOptions, type ReplicaStatus } from './replicas.js'
export { visibleText, visibleTextFor, visibleSql, visibleDrizzle, type Visibility } from './queries/visibility.js'
export * from './queries/users.js'
export * from './queries/experiments.js'
export * from './queries/lists.js'
export * from './queries/readings.js'
export * from './queries/exports.js'
export * from './queries/area.js'
export * from './queries/jobs.js'
export * from './queries/broker.js'
export { ping, poolGateOf, poolConnections } from './queries/health.js'
