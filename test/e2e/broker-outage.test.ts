import t from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { startMosquittoServer } from '@esp/test-helpers/mosquitto'
import { pacedKit, type PacedKit, until } from '@esp/test-helpers/mqtt'
import { HTTP_LINE, startProcess } from '@esp/test-helpers/process'

/**
 * The external broker of scale-out mode going away (issue 21): the ingest process stays up and
 * keeps answering HTTP, reconnects by itself once the broker is back, and storing resumes; a
 * message is never stored twice. Two losses are Mosquitto's, not the platform's, and are only
 * counted: what it held in memory when killed (persistence false), and what devices publish
 * between its restart and ingest's return, because Mosquitto 2.0 restores a persistent session
 * and its queue but not its shared subscriptions (checked with mosquitto 2.0.11). After a clean
 * stop with persistence on, every message the broker acknowledged before the stop is stored: so
 * nothing ingest acknowledged to the broker went unstored.
 */

const DEVICES = 4
/** each device publishes one reading this often, with at most IN_FLIGHT unacknowledged */
const EVERY_MS = 25
const IN_FLIGHT = 20
const OUTAGE_MS = 2000
const START = Date.UTC(2026, 0, 1)

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

for (const { signal, persistence } of [
  { signal: 'SIGKILL', persistence: false },
  { signal: 'SIGTERM', persistence: true }
] as const) {
  t.test(`the external broker stops (${signal}, persistence ${String(persistence)}) for ${OUTAGE_MS / 1000} s and comes back while devices publish`, async (t) => {
    const [broker, database] = await Promise.all([startMosquittoServer(t, { persistence }), createTestDatabase(t)])
    const [owner] = await database.sql<{ id: number }[]>`insert into users (username, email) values ('outage', 'outage@example.org') returning id`
    const tokens = Array.from({ length: DEVICES }, (_, i) => `0a7a9e${i}`)
    const ids = await database.sql<{ id: number, token: string }[]>`
      insert into devices (owner_id, name, device_token, state)
      select ${owner?.id ?? 0}, 'kit ' || token, token, 'never_published' from unnest(${tokens}::text[]) as token
      returning id, device_token as token`
    const ingest = startProcess(t, 'services/ingest/src/main.ts', {
      PORT: '0',
      DATABASE_URL: database.url,
      MQTT_BROKER_URL: broker.url,
      MQTT_CLIENT_ID: 'esp-ingest-outage',
      MQTT_CONNECTIONS: '2'
    })
    const base = (await ingest.waitFor(HTTP_LINE))[1] ?? ''
    await ingest.waitFor(/MQTT\s+external broker/)
    let exitedEarly: number | null | undefined
    void ingest.exited.then((code) => { exitedEarly = code })

    // Probes as a load balancer sends them, the whole time.
    const probes: Array<{ path: string, status: number }> = []
    const probing = new AbortController()
    const prober = (async () => {
      while (!probing.signal.aborted) {
        for (const path of ['/health/live', '/health/ready']) {
          const status = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5000) }).then(async (res) => { await res.arrayBuffer(); return res.status }, () => 0)
          probes.push({ path, status })
        }
        await sleep(100)
      }
    })()

    const devices = await Promise.all(tokens.map(async (token) => await pacedKit(broker.url, token, { everyMs: EVERY_MS, inFlight: IN_FLIGHT, start: START })))
    const stored = async (): Promise<number> => Number((await database.sql`select count(*)::int as n from readings`)[0]?.n)
    await until(async () => await stored() >= 100, 30_000, 'readings stored before the outage')

    await broker.stop(signal)
    const stoppedAt = Date.now()
    await sleep(OUTAGE_MS)
    const before = await stored()
    await broker.start()
    const restartedAt = Date.now()
    await until(async () => await stored() > before, 20_000, 'a reading stored after the broker is back')
    const resumedAt = Date.now()
    t.comment(`broker down ${restartedAt - stoppedAt} ms; first reading stored ${resumedAt - restartedAt} ms after the restart`)
    t.ok(resumedAt - restartedAt < 15_000, 'ingest reconnects by itself and storing resumes within seconds')

    await sleep(2000)
    await Promise.all(devices.map(async (d) => { await d.stop() }))
    // Published once ingest was back (it stored something), and acknowledged by the broker.
    const resumed = (d: PacedKit): number[] => d.published.flatMap((at, m) => at >= resumedAt && d.acked.has(m) ? [m] : [])
    const expected = devices.reduce((n, d) => n + resumed(d).length, 0)
    t.ok(expected > 0, 'devices published after storing resumed')
    const storedOf = async (id: number): Promise<Set<number>> =>
      new Set((await database.sql<{ value: number }[]>`select value from readings where device_id = ${id}`).map((row) => Number(row.value)))
    const missing = async (pick: (d: PacedKit) => number[]): Promise<number> => {
      let n = 0
      for (const [i, d] of devices.entries()) {
        const have = await storedOf(ids[i]?.id ?? 0)
        n += pick(d).filter((m) => !have.has(m)).length
      }
      return n
    }
    await until(async () => await missing(resumed) === 0, 20_000, 'every message acknowledged after the return stored').catch(() => {})
    t.equal(await missing(resumed), 0, `all ${expected} readings acknowledged by the broker after storing resumed are stored`)

    const acked = devices.reduce((n, d) => n + d.acked.size, 0)
    const published = devices.reduce((n, d) => n + d.published.length, 0)
    const beforeStop = (d: PacedKit): number[] => [...d.acked].flatMap(([m, at]) => at < stoppedAt ? [m] : [])
    const lostBefore = await missing(beforeStop)
    const lostGap = await missing((d) => [...d.acked].flatMap(([m, at]) => at >= stoppedAt && (d.published[m] ?? 0) < resumedAt ? [m] : []))
    t.comment(`published ${published}, acknowledged by the broker ${acked}, stored ${await stored()}; acknowledged but not stored: ${lostBefore} acknowledged before the stop, ${lostGap} published before ingest was back`)
    // A clean stop saves the broker's sessions and their queues; a kill loses what it held in memory.
    if (persistence) t.equal(lostBefore, 0, 'after a clean stop, every reading the broker acknowledged before it is stored')

    const [dup] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from (select 1 from readings group by device_id, sensor_id, recorded_at having count(*) > 1) twice`
    t.equal(dup?.n, 0, 'no reading stored twice')
    const [wrong] = await database.sql<{ n: number }[]>`
      select count(*)::int as n from readings where value <> (extract(epoch from recorded_at) * 1000 - ${START}) / 60000`
    t.equal(wrong?.n, 0, 'each stored reading is the one its device published')

    probing.abort()
    await prober
    const failed = probes.filter((p) => p.status !== 200)
    t.same(failed, [], `${probes.length} health probes, live and ready, all 200 throughout (readiness is the database's)`)
    t.equal(exitedEarly, undefined, 'the ingest process stayed up throughout')
    ingest.child.kill('SIGTERM')
    t.equal(await ingest.exited, 0, 'and stops cleanly')
  })
}
