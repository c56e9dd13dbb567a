import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { createDatabase, type Database } from '@esp/db'
import { bearer, buildApi, signUp } from '@esp/test-helpers/api'
import { startStreamingPair, type StreamingPair } from '@esp/test-helpers/pg-replica'
import { REPLICA_READ_ROUTES } from '../src/read-routing.js'

const MAX_LAG_SECONDS = 2
const POLL_MS = 100

/** The value of one series of /metrics (NaN when absent). */
async function metric (app: FastifyInstance, name: string, replica?: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body
  const labels = replica === undefined ? '' : `{replica="${replica}"}`
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `))
  return line === undefined ? Number.NaN : Number(line.slice(line.lastIndexOf(' ') + 1))
}

async function until (what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

interface Tap { teardown: (fn: () => unknown) => void }

function openDatabase (t: Tap, url: string): Database {
  const database = createDatabase(url, { max: 4, applicationName: 'esp-api-test' })
  t.teardown(database.close)
  return database
}

t.test('every route named for replicas is a GET route of the api', async (t) => {
  const { app } = await buildApi(t)
  for (const url of REPLICA_READ_ROUTES) t.ok(app.hasRoute({ method: 'GET', url }), url)
})

t.test('reads on a streaming replica', async (t) => {
  const pair: StreamingPair = await startStreamingPair(t)
  const database = openDatabase(t, pair.primaryUrl)
  const { app } = await buildApi(t, { database, deps: { readReplicas: { urls: [pair.replicaUrl], maxLagSeconds: MAX_LAG_SECONDS, pollIntervalMs: POLL_MS } } })
  const label = `127.0.0.1:${new URL(pair.replicaUrl).port}`

  const owner = await signUp(app)
  const created = await app.inject({ method: 'POST', url: '/v0/devices', headers: bearer(owner.token), payload: { name: 'Before', latitude: 41.39, longitude: 2.17 } })
  t.equal(created.statusCode, 201)
  const id = (created.json() as { id: number }).id
  const anonymousName = async (t: Test, on = app): Promise<string> => {
    const res = await on.inject({ url: `/v0/devices/${id}` })
    t.equal(res.statusCode, 200, 'an anonymous device page answers 200')
    return (res.json() as { name: string }).name
  }
  const served = async (): Promise<number> => await metric(app, 'esp_db_replica_requests_total', label)

  await pair.caughtUp()
  await until('the replica in rotation', async () => await metric(app, 'esp_db_replica_in_rotation', label) === 1)
  t.equal(await anonymousName(t), 'Before')
  t.ok(await served() >= 1, 'the replica served the anonymous read')
  const text = (await app.inject({ url: '/metrics' })).body
  t.notOk(text.includes(new URL(pair.replicaUrl).password), 'the replica\'s password is not in the metrics')
  t.match(text, `esp_db_replica_lag_bytes{replica="${label}"} `)

  await t.test('a download link stands for its user, who carries no credential: the primary serves it', async (t) => {
    const link = await app.inject({ method: 'POST', url: `/v0/devices/${id}/readings/export/link`, headers: bearer(owner.token) })
    t.equal(link.statusCode, 200)
    const url = new URL((link.json() as { url: string }).url)
    const before = await served()
    t.equal((await app.inject({ url: `/v0/devices/${id}/readings/export` })).statusCode, 200, 'the export without it')
    t.equal(await served(), before + 1, 'is an anonymous read the replica serves')
    t.equal((await app.inject({ url: `${url.pathname}${url.search}` })).statusCode, 200, 'the export through the link')
    t.equal(await served(), before + 1, 'is not')
  })

  await t.test('(a) an anonymous read is served by the replica: paused replay keeps the old data', async (t) => {
    await pair.replicaAdmin`select pg_wal_replay_pause()`
    const patched = await app.inject({ method: 'PATCH', url: `/v0/devices/${id}`, headers: bearer(owner.token), payload: { name: 'After' } })
    t.equal(patched.statusCode, 200)
    t.equal(patched.json().name, 'After', 'the write answers with what it wrote')
    const before = await served()
    t.equal(await anonymousName(t), 'Before', 'the anonymous read comes from the paused replica')
    t.equal(await served(), before + 1)
    const list = await app.inject({ url: `/v0/users/${owner.username}` })
    t.equal(list.statusCode, 200)
    t.equal(list.json().devices[0].name, 'Before', 'a user page too')
  })

  await t.test('(b) read-your-writes: the writer reads its own write', async (t) => {
    const own = await app.inject({ url: `/v0/devices/${id}`, headers: bearer(owner.token) })
    t.equal(own.statusCode, 200)
    t.equal(own.json().name, 'After', 'a caller with credentials reads the primary')
    const me = await app.inject({ url: '/v0/me', headers: bearer(owner.token) })
    t.equal(me.json().devices[0].name, 'After')
  })

  await t.test('(e) without DATABASE_READ_URL the same database serves as before', async (t) => {
    const plain = await buildApi(t, { database: openDatabase(t, pair.primaryUrl) })
    const res = await plain.app.inject({ url: `/v0/devices/${id}` })
    t.equal(res.statusCode, 200)
    t.equal(res.json().name, 'After', 'the anonymous read comes from the primary')
    const text = (await plain.app.inject({ url: '/metrics' })).body
    t.notOk(text.includes('esp_db_replica'), 'no replica series')
  })

  await t.test('(c) lag grows while replay is paused; past the limit the replica leaves rotation, and returns', async (t) => {
    await until('a measured lag', async () => await metric(app, 'esp_db_replica_lag_bytes', label) > 0 && await metric(app, 'esp_db_replica_lag_seconds', label) > 0.5)
    const early = await metric(app, 'esp_db_replica_lag_seconds', label)
    await until('the replica out of rotation', async () => await metric(app, 'esp_db_replica_in_rotation', label) === 0)
    t.ok(await metric(app, 'esp_db_replica_lag_seconds', label) > Math.max(early, MAX_LAG_SECONDS), 'the lag grew past the limit')
    const before = await served()
    t.equal(await anonymousName(t), 'After', 'reads see the fresh data from the primary')
    t.equal(await served(), before, 'the replica served nothing')

    await pair.replicaAdmin`select pg_wal_replay_resume()`
    await until('the replica back in rotation', async () => await metric(app, 'esp_db_replica_in_rotation', label) === 1)
    t.equal(await metric(app, 'esp_db_replica_lag_seconds', label), 0, 'no lag once caught up')
    t.equal(await anonymousName(t), 'After')
    t.equal(await served(), before + 1, 'the replica serves again')
  })

  await t.test('(d) a killed replica leaves rotation and reads still succeed', async (t) => {
    // An instance that polls once a minute still has the replica in rotation after the kill: its
    // read finds it gone and runs again on the primary.
    const slow = await buildApi(t, { database: openDatabase(t, pair.primaryUrl), deps: { readReplicas: { urls: [pair.replicaUrl], maxLagSeconds: MAX_LAG_SECONDS, pollIntervalMs: 60_000 } } })
    t.equal(await metric(slow.app, 'esp_db_replica_in_rotation', label), 1)
    await pair.killReplica()
    for (let i = 0; i < 3; i++) t.equal(await anonymousName(t, slow.app), 'After', 'no 5xx: the read ran again on the primary')
    t.equal(await metric(slow.app, 'esp_db_replica_fallbacks_total', label), 1, 'once: the replica left rotation at the first failure')
    t.equal(await metric(slow.app, 'esp_db_replica_in_rotation', label), 0)

    for (let i = 0; i < 5; i++) t.equal(await anonymousName(t), 'After')
    const history = await app.inject({ url: `/v0/devices/${id}/readings?sensor_id=55&rollup=1h` })
    t.equal(history.statusCode, 200, 'a history read answers')
    await until('the replica out of rotation', async () => await metric(app, 'esp_db_replica_in_rotation', label) === 0)
    for (const url of [`/v0/devices/${id}`, '/v0/devices', '/v0/devices/world_map', '/v0/search?q=after', '/v0/users', '/v0/sensors', '/v0/kits/26']) {
      t.equal((await app.inject({ url })).statusCode, 200, url)
    }
  })
})
