export { createTestDatabase, databaseUrl, TEST_ENV } from './test-database.js'
