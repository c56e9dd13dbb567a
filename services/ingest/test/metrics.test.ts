import t from 'tap'
import { apiService } from '@esp/api'
import { ingestService } from '@esp/ingest'
import { systemClock } from '@esp/domain'
import { bearer, signUp, TEST_JWT_SECRET } from '@esp/test-helpers/api'
import { sample } from '@esp/test-helpers/metrics'
import { connectMqtt, until } from '@esp/test-helpers/mqtt'
import { makeDevice } from '@esp/test-helpers/platform'
import { tempDataDir } from '@esp/test-helpers/process'
import { buildTestServer } from '@esp/test-helpers/server'

const METRICS_TOKEN = 'metrics-token-for-the-tests'

t.test('GET /metrics: HTTP by route, readings stored, MQTT connections and messages, pool use; token protected', async (t) => {
  const dataDir = tempDataDir(t)
  const { app, database } = await buildTestServer(t, async (app, database) => {
    await app.register(apiService, { database, dataDir, accessTokenTtlSeconds: 3600, passwordResetTtlSeconds: 3600, uploadMaxBytes: 1024, uploadSecret: 'upload-secret' })
    await app.register(ingestService, { database, maxValues: 1000, maxFutureSeconds: 86_400, mqtt: { host: '127.0.0.1', port: 0, explicit: true } })
  }, (database) => ({
    auth: { database, jwtSecret: TEST_JWT_SECRET, clock: systemClock },
    // createTestDatabase names its connections esp-test; the file's database is its own.
    metrics: { token: METRICS_TOKEN, pool: { database, max: 5, applicationName: 'esp-test' } }
  }))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const scrape = async (): Promise<string> => {
    const res = await app.inject({ url: '/metrics', headers: bearer(METRICS_TOKEN) })
    t.equal(res.statusCode, 200, res.statusCode === 200 ? 'scrape' : res.body)
    t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
    return res.body
  }

  const anonymous = await app.inject({ url: '/metrics' })
  t.equal(anonymous.statusCode, 401)
  t.match(anonymous.json(), { id: 'unauthorized', message: String, errors: null, url: null })
  t.equal((await app.inject({ url: '/metrics', headers: bearer(`${METRICS_TOKEN}x`) })).statusCode, 401, 'a wrong token is refused')
  t.equal((await app.inject({ url: `/metrics?access_token=${METRICS_TOKEN}` })).statusCode, 401, 'only the header carries the metrics token')

  const owner = await signUp(app)
  const device = await makeDevice(database, owner.id)
  const token = 'a1b2c3'
  await database.sql`update devices set device_token = ${token}, kit_id = 26 where id = ${device}`
  const posted = await app.inject({
    method: 'POST',
    url: `/v0/devices/${device}/readings`,
    headers: bearer(owner.token),
    payload: { data: [{ recorded_at: '2026-11-01T10:00:00Z', sensors: [{ id: 55, value: 1 }, { id: 56, value: 2 }] }, { recorded_at: '2026-11-01T10:01:00Z', sensors: [{ id: 55, value: 3 }] }] }
  })
  t.equal(posted.statusCode, 200, posted.body)
  t.equal((await app.inject({ url: `/v0/devices/${device}`, headers: bearer(owner.token) })).statusCode, 200)
  t.equal((await app.inject({ url: '/v0/devices/999999999' })).statusCode, 404)

  const kit = await connectMqtt(t, `mqtt://127.0.0.1:${app.mqttListening?.port ?? 0}`, { clientId: token })
  await kit.publishAsync(`device/sck/${token}/readings`, JSON.stringify({ data: [{ recorded_at: '2026-11-01T11:00:00Z', sensors: [{ id: 55, value: 4 }] }] }), { qos: 1 })
  await kit.publishAsync(`device/sck/${token}/readings`, 'not json', { qos: 1 })
  await until(() => app.mqttStats.rejected === 1, 5000, 'the bad payload to be counted')

  const text = await scrape()
  t.equal(sample(text, 'esp_readings_stored_total'), 4, 'readings stored over HTTP and MQTT')
  t.equal(sample(text, 'esp_http_requests_total', { method: 'POST', route: '/v0/devices/:device_id/readings', status_code: '200' }), 1, 'by route pattern, not by path')
  t.equal(sample(text, 'esp_http_requests_total', { method: 'GET', route: '/v0/devices/:id', status_code: '404' }), 1)
  t.equal(sample(text, 'esp_http_request_duration_seconds_count', { method: 'POST', route: '/v0/devices/:device_id/readings', status_code: '200' }), 1)
  t.ok(sample(text, 'esp_http_request_duration_seconds_bucket', { route: '/v0/devices/:device_id/readings', le: '+Inf' }) === 1, 'latency histogram')
  t.notOk(text.includes(`/v0/devices/${device}"`), 'no series per device')
  t.equal(sample(text, 'esp_mqtt_connections'), 1)
  t.equal(sample(text, 'esp_mqtt_messages_total'), 2)
  t.equal(sample(text, 'esp_mqtt_readings_stored_total'), 1)
  t.equal(sample(text, 'esp_mqtt_messages_not_stored_total', { reason: 'rejected' }), 1)
  t.equal(sample(text, 'esp_mqtt_backlog'), 0)
  t.equal(sample(text, 'esp_db_pool_max'), 5)
  t.ok((sample(text, 'esp_db_pool_connections', { state: 'idle' }) ?? 0) + (sample(text, 'esp_db_pool_connections', { state: 'busy' }) ?? 0) >= 1, 'open connections of this pool')
  t.ok(sample(text, 'esp_process_resident_memory_bytes') !== undefined, 'process metrics')
  t.ok(sample(text, 'esp_nodejs_eventloop_lag_seconds') !== undefined, 'event-loop lag')

  await kit.endAsync()
  await until(() => app.mqttStats.connections === 0, 5000, 'the disconnect')
  t.equal(sample(await scrape(), 'esp_mqtt_connections'), 0)
  t.equal(sample(await scrape(), 'esp_mqtt_messages_total'), 2, 'counters keep their totals across scrapes')
})

t.test('without METRICS_TOKEN /metrics is open (a private network or the proxy guards it)', async (t) => {
  const { app } = await buildTestServer(t, async () => {})
  const res = await app.inject({ url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.body, /# TYPE esp_http_requests_total counter/)
  t.match(res.body, /# TYPE esp_readings_stored_total counter/)
})

t.test('guessing the metrics token is throttled like any credential', async (t) => {
  const { app } = await buildTestServer(t, async () => {}, (database) => ({
    auth: { database, jwtSecret: TEST_JWT_SECRET, clock: systemClock, throttle: { accountFailures: 3, addressFailures: 3, windowSeconds: 60, lockoutSeconds: 60, maxLockoutSeconds: 60 } },
    metrics: { token: METRICS_TOKEN }
  }))
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await app.inject({ url: '/metrics', headers: bearer(`guess-${i}`) })).statusCode)
  t.same(statuses, [401, 401, 401, 429, 429], 'three wrong tokens, then the address is locked')
  const right = await app.inject({ url: '/metrics', headers: bearer(METRICS_TOKEN) })
  t.equal(right.statusCode, 429, 'the right token is refused while locked: guessing gains nothing')
  t.ok(Number(right.headers['retry-after']) > 0, 'Retry-After says when to come back')
  t.match(right.json(), { id: String, message: String, errors: null, url: null })
})
