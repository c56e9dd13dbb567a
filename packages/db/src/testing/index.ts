export { createTestDatabase, databaseUrl, TEST_ENV } from './test-database.js'
export { recordingRunner, rawInsertSteps } from './recording-runner.js'
