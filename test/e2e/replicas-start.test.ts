import { randomBytes } from 'node:crypto'
import t from 'tap'
import postgres from 'postgres'
import { dropDatabase } from '@esp/db'
import { databaseUrl, TEST_ENV } from '@esp/db/testing'
import { startApiReplicas } from '@esp/test-helpers/process'

// Replicas of a deployment start together. On a new database each one migrates and creates the
// job queues; pg-boss's create_queue deadlocked against itself, and one replica in two failed to
// start ("deadlock detected"). Three api processes at once on an empty database, six times (without the fix about one round in three failed).

t.test('api replicas started at the same moment on a new database all come up', async (t) => {
  const adminUrl = process.env[TEST_ENV.adminUrl] ?? ''
  for (let round = 1; round <= 6; round++) {
    const name = `esp_replicas_${randomBytes(5).toString('hex')}`
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database "${name}"`)
    await admin.end()
    await t.test(`round ${round}`, async (t) => {
      t.teardown(async () => { await dropDatabase(adminUrl, name) })
      const bases = await startApiReplicas(t, databaseUrl(adminUrl, name), {}, 3)
      t.equal(new Set(bases).size, 3, 'three replicas are listening')
      for (const base of bases) {
        t.equal((await fetch(`${base}/health/ready`)).status, 200, `${base} is ready`)
        t.equal((await fetch(`${base}/v0/sensors?per_page=1`)).status, 200, `${base} answers from the seeded catalogue`)
      }
    })
  }
})
