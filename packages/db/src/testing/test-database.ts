import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { createDatabase, type Database } from '../client.js'
import { dropDatabase } from '../embedded.js'
import { migrateDatabase } from '../migrate.js'
import { seedCatalogue } from '../seed.js'

/** What scripts/run-tests.ts hands every test process. */
export const TEST_ENV = { adminUrl: 'ESP_TEST_ADMIN_URL', template: 'ESP_TEST_TEMPLATE' } as const

interface Teardown { teardown: (fn: () => unknown) => void }

function required (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run the tests through \`pnpm test\`, which prepares the test database server`)
  }
  return value
}

export function databaseUrl (adminUrl: string, name: string): string {
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * A database of its own for one test file, cloned from the migrated and seeded template (about
 * 20 ms), so tap's parallel files never see each other's rows. Dropped when the test ends.
 */
export async function createTestDatabase (t: Teardown, options: { max?: number } = {}): Promise<Database> {
  const adminUrl = required(TEST_ENV.adminUrl)
  const template = required(TEST_ENV.template)
  const name = `${template}_${randomBytes(5).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database "${name}" template "${template}"`)
  } finally {
    await admin.end()
  }
  const database = createDatabase(databaseUrl(adminUrl, name), { max: options.max ?? 5, applicationName: 'esp-test' })
  t.teardown(async () => {
    await database.close()
    await dropDatabase(adminUrl, name)
  })
  return database
}

/**
 * The template `pnpm test` prepares once for a run (scripts/run-tests.ts): a new database named
 * `name`, migrated and seeded, which every test file clones (`createTestDatabase`).
 */
export async function createTemplateDatabase (adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database "${name}"`)
  } finally {
    await admin.end()
  }
  const url = databaseUrl(adminUrl, name)
  await migrateDatabase(url)
  const seeded = createDatabase(url, { max: 1 })
  try {
    await seedCatalogue(seeded)
  } finally {
    await seeded.close()
  }
}

/** Drops the template and whatever test databases crashed files left: they carry its name as a prefix. */
export async function dropTemplateDatabases (adminUrl: string, name: string): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    const leftovers = await admin<{ datname: string }[]>`select datname from pg_database where datname like ${`${name}%`}`
    for (const { datname } of leftovers) await admin.unsafe(`drop database if exists "${datname}" with (force)`)
  } finally {
    await admin.end()
  }
}
