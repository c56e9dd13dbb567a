import t from 'tap'
import { createDatabase, freePort, migrateDatabase, seedCatalogue } from '@esp/db'
import { sample } from '@esp/test-helpers/metrics'
import { startPgCluster } from '@esp/test-helpers/pg-cluster'
import { collect, connectMqtt, pacedKit, subscribeGranted, until } from '@esp/test-helpers/mqtt'
import { startProcess, type Started } from '@esp/test-helpers/process'
import { authBalancer, brokerAuthSecret, startRabbitCluster } from '@esp/test-helpers/rabbitmq'

/**
 * Issue 24: a three-node RabbitMQ cluster in front of two ingest instances. Kits publish at QoS 1
 * the whole time; one broker node (the queue's leader) is killed with -9, then one ingest
 * instance, then the database stops for a while. Every PUBACKed reading must be stored exactly
 * once, and every kit keeps publishing through the nodes left, and through the database's
 * absence: the queue holds their readings until ingest can store them.
 */

const KITS = 24
/** each kit publishes a reading this often, with at most IN_FLIGHT unacknowledged */
const EVERY_MS = 40
const IN_FLIGHT = 10
const START = Date.UTC(2026, 0, 1)
const SENSOR = 55

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

const DATABASE_AWAY_MS = 3000

t.test('a three-node broker cluster and two ingest instances: a broker node and an ingest instance killed with -9, the database away, nothing acknowledged is lost', async (t) => {
  // A PostgreSQL of the test's own, to stop and start.
  const server = await startPgCluster(t)
  await migrateDatabase(server.url)
  const database = createDatabase(server.url, { max: 4 })
  t.teardown(async () => { await database.close().catch(() => {}) })
  await seedCatalogue(database)
  const [owner] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('cluster', 'cluster@example.org') returning id`
  const tokens = Array.from({ length: KITS }, (_, i) => `c1a5${i.toString(16).padStart(2, '0')}`)
  await database.sql`
    insert into devices (owner_id, name, device_token, state)
    select ${owner?.id ?? 0}, 'kit ' || token, token, 'never_published' from unnest(${tokens}::text[]) as token`

  const ingestPorts = [await freePort(), await freePort()]
  // The auth backend listens apart from the public port, and answers only with the secret.
  const authPorts = [await freePort(), await freePort()]
  const secret = brokerAuthSecret()
  const alive = new Set([0, 1])
  const authUrl = await authBalancer(t, () => [...alive].map((i) => `http://127.0.0.1:${authPorts[i] ?? 0}`), secret)
  const cluster = await startRabbitCluster(t, { authUrl })
  const amqpUrls = cluster.nodes.map((n) => n.amqpUrl)
  const instances: Started[] = ingestPorts.map((port, i) => startProcess(t, 'services/ingest/src/main.ts', {
    PORT: String(port),
    DATABASE_URL: server.url,
    // Each instance starts on a different node.
    BROKER_AMQP_URLS: [...amqpUrls.slice(i), ...amqpUrls.slice(0, i)].join(','),
    BROKER_PREFETCH: '200',
    BROKER_AUTH_PORT: String(authPorts[i] ?? 0),
    BROKER_AUTH_SECRET: secret
  }))
  for (const instance of instances) await instance.waitFor(/MQTT\s+broker cluster/, 60_000)

  const mqttPorts = cluster.nodes.map((n) => Number(new URL(n.mqttUrl).port))
  const kits = await Promise.all(tokens.map(async (token, i) => await pacedKit({ servers: mqttPorts.map((_, k) => ({ host: '127.0.0.1', port: mqttPorts[(i + k) % mqttPorts.length] ?? 0 })) }, token, { everyMs: EVERY_MS, inFlight: IN_FLIGHT, start: START })))
  t.teardown(async () => { await Promise.all(kits.map(async (k) => await k.client.endAsync(true))) })
  const stored = async (): Promise<number> => Number((await database.sql`select count(*)::int as n from readings`)[0]?.n)
  await until(async () => await stored() >= KITS * 20, 60_000, 'readings stored before the faults')

  // Only the broker reaches the auth backend: the public port does not know it, its own port
  // wants the secret.
  const check = `/broker/auth/topic?username=device&vhost=%2F&resource=topic&name=amq.topic&permission=write&routing_key=device.sck.${tokens[0] ?? ''}.readings&variable_map.client_id=${tokens[0] ?? ''}`
  for (const prefix of ['', '/v0']) {
    const res = await fetch(`http://127.0.0.1:${ingestPorts[1] ?? 0}${prefix}${check}`)
    const body = await res.json() as { id?: string }
    t.same([res.status, body.id], [404, 'not_found'], `${prefix}/broker/auth/topic on the public port: 404, as any unknown route`)
  }
  t.equal((await fetch(`http://127.0.0.1:${authPorts[1] ?? 0}${check}`)).status, 401, 'its own port without the secret: 401')
  const answered = await fetch(`http://127.0.0.1:${authPorts[1] ?? 0}${check}`, { headers: { authorization: `Basic ${Buffer.from(`broker:${secret}`).toString('base64')}` } })
  t.same([answered.status, await answered.text()], [200, 'allow'], 'with it, the check is answered')

  // The edge: the broker asks ingest, and refuses before anything reaches the queue.
  const node = cluster.nodes[1]?.mqttUrl ?? ''
  // RabbitMQ 3.10 answers a refused subscription by closing the connection.
  const snooper = await connectMqtt(t, node, { clientId: 'snooper' })
  const snooperClosed = new Promise<'closed'>((resolve) => { snooper.once('close', () => { resolve('closed') }) })
  t.ok([128, 'closed'].includes(await Promise.race([subscribeGranted(snooper, 'device/sck/#').catch(async () => await snooperClosed), snooperClosed]) ?? 0),
    'device topics, which carry tokens, cannot be subscribed to')
  const listener = await connectMqtt(t, node, { clientId: 'live-listener' })
  t.equal(await subscribeGranted(listener, 'devices/+/readings'), 0, 'live readings can')
  const live = collect(listener)
  await live.waitFor(1, 10_000)
  t.match(live.messages[0]?.topic, /^devices\/\d+\/readings$/, 'ingest publishes what it stored to the live topics through the cluster')
  const refused = async (clientId: string, token: string): Promise<boolean> => {
    const client = await connectMqtt(t, node, { clientId })
    const closed = new Promise<boolean>((resolve) => { client.once('close', () => { resolve(true) }) })
    client.publish(`device/sck/${token}/readings`, JSON.stringify({ data: [{ recorded_at: '2026-01-01T00:00:00Z', sensors: [{ id: SENSOR, value: -1 }] }] }), { qos: 1 })
    return await Promise.race([closed, sleep(5000).then(() => false)])
  }
  t.ok(await refused('0ddba11', '0ddba11'), 'a token no device has is refused at the edge: the broker closes the connection')
  t.ok(await refused('c1a500', 'c1a501'), "a kit cannot publish under another kit's token")
  const [strays] = await database.sql<{ n: number }[]>`select count(*)::int as n from readings where value = -1`
  t.equal(strays?.n, 0, 'nothing refused was stored')

  // The node that leads the queue's replicas: the hardest one to lose.
  const queues = JSON.parse(await cluster.ctl('list_queues', 'name', 'leader', '--formatter', 'json')) as Array<{ name: string, leader: string }>
  const leader = queues.find((q) => q.name === 'esp.ingest')?.leader
  const victim = cluster.nodes.find((n) => n.name === leader) ?? cluster.nodes[0]
  t.ok(victim !== undefined && leader !== undefined, `the queue has a leader (${String(leader)})`)
  const killedAt = Date.now()
  await victim?.kill()
  // Every kit acknowledged again after the kill: the kits on that node moved to another.
  await until(() => kits.every((k) => [...k.acked.values()].some((at) => at > killedAt)), 60_000, 'every kit acknowledged again after the node was killed')
  const brokerRecoveryMs = Math.max(...kits.map((k) => Math.min(...[...k.acked.values()].filter((at) => at > killedAt)))) - killedAt

  await sleep(1000)
  const ingestKilledAt = Date.now()
  instances[0]?.child.kill('SIGKILL')
  alive.delete(0)
  await instances[0]?.exited
  const storedAtKill = await stored()
  await until(async () => await stored() > storedAtKill + KITS * 5, 60_000, 'the other instance goes on storing')
  const ingestRecoveryMs = Date.now() - ingestKilledAt

  // The database away: the broker still takes and acknowledges what the kits send.
  await sleep(1000)
  await server.stopFast()
  const awayAt = Date.now()
  await sleep(DATABASE_AWAY_MS)
  const ackedWhileAway = kits.reduce((sum, k) => sum + [...k.acked.values()].filter((at) => at > awayAt).length, 0)
  await server.start()
  const backAt = Date.now()
  const storedBefore = await stored()
  await until(async () => await stored() > storedBefore, 60_000, 'storing goes on once the database is back')
  const databaseRecoveryMs = Date.now() - backAt
  t.ok(ackedWhileAway > KITS, `the kits' readings were acknowledged while the database was away (${ackedWhileAway})`)

  await sleep(2000)
  await Promise.all(kits.map(async (k) => { await k.stop() }))
  for (const k of kits) t.ok([...k.acked.values()].some((at) => at > backAt), `${k.token} kept publishing through every fault`)

  const acknowledged = kits.reduce((sum, k) => sum + k.acked.size, 0)
  // What was acknowledged is in the queue, replicated: the instance left stores all of it.
  const missing = async (): Promise<number> => {
    const rows = await database.sql<{ token: string, m: number }[]>`
      select d.device_token as token, ((extract(epoch from r.recorded_at) * 1000 - ${START}) / 60000)::int as m
      from readings r join devices d on d.id = r.device_id`
    const have = new Set(rows.map((r) => `${r.token}:${r.m}`))
    return kits.reduce((sum, k) => sum + [...k.acked.keys()].filter((m) => !have.has(`${k.token}:${m}`)).length, 0)
  }
  await until(async () => await missing() === 0, 60_000, 'every acknowledged reading stored').catch(() => {})
  const lost = await missing()
  const [counts] = await database.sql<{ n: number, distinct: number }[]>`
    select count(*)::int as n, count(distinct (device_id, sensor_id, recorded_at))::int as distinct from readings`
  const [wrong] = await database.sql<{ n: number }[]>`
    select count(*)::int as n from readings where value <> (extract(epoch from recorded_at) * 1000 - ${START}) / 60000`
  const metrics = await (await fetch(`http://127.0.0.1:${ingestPorts[1] ?? 0}/metrics`)).text()
  const redelivered = sample(metrics, 'esp_mqtt_readings_duplicates_total') ?? 0
  t.comment(`readings acknowledged ${acknowledged}, stored ${counts?.n ?? 0}, lost ${lost}, stored twice ${(counts?.n ?? 0) - (counts?.distinct ?? 0)}, ` +
    `redelivered and recognised as stored ${redelivered}; every kit acknowledged again ${brokerRecoveryMs} ms after the node was killed, ` +
    `storing went on ${ingestRecoveryMs} ms after the ingest instance was; ` +
    `${ackedWhileAway} readings acknowledged in the ${DATABASE_AWAY_MS} ms the database was away, storing went on ${databaseRecoveryMs} ms after it was back`)
  t.equal(lost, 0, 'every acknowledged reading is stored')
  t.equal(counts?.n, counts?.distinct, 'none is stored twice')
  t.equal(wrong?.n, 0, 'each reading is the one its kit published')
  t.ok((counts?.n ?? 0) >= acknowledged, 'what was stored includes every acknowledged reading')
})
