export { createTemplateDatabase, createTestDatabase, databaseUrl, dropTemplateDatabases, TEST_ENV } from './test-database.js'
export { recordingRunner, rawInsertSteps } from './recording-runner.js'
export { makeDevice, makeReadings, makeUser, setUserRole, type DeviceFields, type MadeDevice, type MadeUser, type ReadingFields, type UserFields } from './factories.js'
export { installWriteJournal, lowestIds, pendingJobCount, type JournalRow } from './write-journal.js'
