import { mkdir, readdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import t, { type Test } from 'tap'
import { loadEngine, postgresRunner, TIERS } from '@esp/db'
import { notifyLowBattery, notifyStoppedPublishing, purgeArchivedDevices, type ScheduledDeps } from '@esp/exporter'
import { sendJob } from '@esp/jobs'
import { bearer, signUp } from '@esp/test-helpers/api'
import { makeDevice } from '@esp/test-helpers/platform'
import { exporterPlatform } from './platform.js'

const HOUR = 3600 * 1000

/**
 * api, ingest and a real exporter (workers, real SMTP); the scheduled jobs are called as the
 * pg-boss schedule would call them, with the time as an argument, so the test moves the clock.
 */
async function platform (t: Test) {
  const harness = await exporterPlatform(t)
  const { app, database, dataDir } = harness
  const deps: ScheduledDeps = {
    database,
    engine: await loadEngine(postgresRunner(database.sql)),
    send: async (tx, key, payload) => { await sendJob(app.boss, tx, key, payload) },
    archiveDir: path.join(dataDir, 'archives'),
    settings: { purgeGraceSeconds: 24 * 3600, stoppedAfterSeconds: 3600, lowBatteryPercent: 15 }
  }
  /** mail jobs queued for this address and subject (sent or not yet) */
  const mails = async (to: string, subject: string): Promise<number> => {
    const [row] = await database.sql<{ n: number }[]>`select count(*)::int as n from pgboss.job where name = 'mail' and data->>'to' = ${to} and data->>'subject' = ${subject}`
    return row?.n ?? 0
  }
  // Access tokens live an hour on the test clock, which the tests move by days: log in each time.
  const post = async (owner: { username: string, password: string }, device: number, at: Date, sensors: { id: number, value: number }[]): Promise<void> => {
    const session = await app.inject({ method: 'POST', url: '/v0/sessions', payload: { username: owner.username, password: owner.password } })
    const token = session.json().access_token as string
    const res = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(token), payload: { data: [{ recorded_at: at.toISOString(), sensors }] } })
    if (res.statusCode !== 200) throw new Error(res.body)
  }
  return { ...harness, deps, mails, post, now: harness.clock }
}

t.test('purge: devices archived longer than the grace period go, with readings and archives; twice is harmless', async (t) => {
  const { app, database, deps, post, now, advance } = await platform(t)
  const owner = await signUp(app)
  const old = await makeDevice(database, owner.id)
  const recent = await makeDevice(database, owner.id)
  const active = await makeDevice(database, owner.id)
  for (const device of [old, recent, active]) await post(owner, device, new Date(now().getTime() - HOUR), [{ id: 55, value: 21 }, { id: 56, value: 40 }])
  await database.sql`update devices set archived_at = ${new Date(now().getTime() - 25 * HOUR).toISOString()}::timestamptz where id = ${old}`
  await database.sql`update devices set archived_at = ${new Date(now().getTime() - HOUR).toISOString()}::timestamptz where id = ${recent}`
  await mkdir(path.join(deps.archiveDir, String(old)), { recursive: true })
  await writeFile(path.join(deps.archiveDir, String(old), `${old}_1700000000000.csv`), 'timestamp\n')
  const readings = async (device: number): Promise<number> =>
    (await database.sql<{ n: number }[]>`select count(*)::int as n from readings where device_id = ${device}`)[0]?.n ?? -1

  // Two exporters at the same tick: one deletes, the other finds nothing left.
  const [first, second] = await Promise.all([purgeArchivedDevices(deps, now()), purgeArchivedDevices(deps, now())])
  t.same([...(first ?? []), ...(second ?? [])], [old], 'the device archived 25 h ago, once')
  t.same(await purgeArchivedDevices(deps, now()), [], 'a second run finds nothing')
  t.same((await database.sql`select id from devices where id in (${old}, ${recent}, ${active}) order by id`).map((r) => r.id), [recent, active])
  t.equal(await readings(old), 0, 'its readings are gone')
  t.equal(await readings(recent), 2, 'within the grace period: kept')
  t.equal(await readings(active), 2)
  t.same(await readdir(deps.archiveDir), [], 'its archives are gone')
  if (deps.engine.name === 'native') {
    for (const tier of TIERS) {
      const [rows] = await database.sql<{ n: number }[]>`select count(*)::int as n from ${database.sql(tier.table)} where device_id = ${old}`
      t.equal(rows?.n, 0, `and its rollup tier ${tier.table}`)
    }
  }

  advance(24 * HOUR)
  t.same(await purgeArchivedDevices(deps, now()), [recent], 'the other one once its grace period is over')
  t.same(await purgeArchivedDevices(deps, now()), [])
  t.equal(await readings(active), 2, 'active devices are never purged')
})

t.test('stopped publishing: one mail per outage, whatever the number of runs', async (t) => {
  const { app, database, deps, smtp, mails, post, now, advance } = await platform(t)
  const owner = await signUp(app)
  const watched = await makeDevice(database, owner.id, { name: 'balcony' })
  const unwatched = await makeDevice(database, owner.id)
  const silent = await makeDevice(database, owner.id)
  await database.sql`update devices set notify_stopped_publishing = true where id in (${watched}, ${silent})`
  await post(owner, watched, new Date(now().getTime() - 2 * HOUR), [{ id: 55, value: 20 }])
  await post(owner, unwatched, new Date(now().getTime() - 2 * HOUR), [{ id: 55, value: 20 }])
  const subject = 'Device stopped publishing'

  const [a, b] = await Promise.all([notifyStoppedPublishing(deps, now()), notifyStoppedPublishing(deps, now())])
  t.same([...(a ?? []), ...(b ?? [])], [watched], 'only the watched device that published and went quiet, once')
  t.same(await notifyStoppedPublishing(deps, now()), [])
  advance(30 * HOUR)
  t.same(await notifyStoppedPublishing(deps, now()), [], 'the same outage a day later: no second mail')
  t.equal(await mails(owner.email, subject), 1)
  const [mail] = await smtp.waitFor(1)
  t.equal(mail?.subject, subject)
  t.same(mail?.to, [owner.email])
  t.match(mail?.text, /"balcony"/)

  await post(owner, watched, now(), [{ id: 55, value: 21 }])
  t.same(await notifyStoppedPublishing(deps, now()), [], 'publishing again')
  advance(2 * HOUR)
  t.same(await notifyStoppedPublishing(deps, now()), [watched], 'a new outage: a new mail')
  t.same(await notifyStoppedPublishing(deps, now()), [])
  t.equal(await mails(owner.email, subject), 2)
  await smtp.waitFor(2)
})

t.test('low battery: one mail per episode, -1 (no battery) ignored', async (t) => {
  const { app, database, deps, smtp, mails, post, now, advance } = await platform(t)
  const owner = await signUp(app)
  const low = await makeDevice(database, owner.id, { name: 'roof' })
  const none = await makeDevice(database, owner.id)
  const off = await makeDevice(database, owner.id)
  await database.sql`update devices set notify_low_battery = true where id in (${low}, ${none})`
  await post(owner, low, new Date(now().getTime() - 60_000), [{ id: 10, value: 9.7 }])
  await post(owner, none, new Date(now().getTime() - 60_000), [{ id: 10, value: -1 }])
  await post(owner, off, new Date(now().getTime() - 60_000), [{ id: 10, value: 5 }])
  const subject = 'Device battery low'

  const [a, b] = await Promise.all([notifyLowBattery(deps, now()), notifyLowBattery(deps, now())])
  t.same([...(a ?? []), ...(b ?? [])], [low], 'only the watched device with a low battery, once')
  advance(13 * HOUR)
  t.same(await notifyLowBattery(deps, now()), [], 'still low later: the same episode')
  t.equal(await mails(owner.email, subject), 1)
  const [mail] = await smtp.waitFor(1)
  t.equal(mail?.subject, subject)
  t.match(mail?.text, /"roof".*9%/s)

  await post(owner, low, now(), [{ id: 10, value: 80 }])
  t.same(await notifyLowBattery(deps, now()), [], 'charged: the episode ends')
  advance(60_000)
  await post(owner, low, now(), [{ id: 10, value: 12 }])
  t.same(await notifyLowBattery(deps, now()), [low], 'low again: a new episode')
  t.same(await notifyLowBattery(deps, now()), [])
  t.equal(await mails(owner.email, subject), 2)
  await smtp.waitFor(2)
})
