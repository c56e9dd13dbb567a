/**
 * Every request's cost is bounded before its work starts (issue 33). Generated from GET /docs/json:
 * each GET operation gets the most expensive parameters its schema allows (test/helpers/
 * costly-requests.ts: 1970 to 2200, every rollup, sensor_ids=all, zones with odd offsets, the
 * largest page, flags on), against a device with readings across four decades, a year of hours
 * and a dense day. Each answer must be below 500 and in the error shape when a 4xx, cost the
 * process at most CPU_BUDGET_MS of CPU, and leave memory bounded. A new route is covered as soon
 * as the document lists it.
 */
import v8 from 'node:v8'
import vm from 'node:vm'
import t from 'tap'
import { bearer } from '@esp/test-helpers/api'
import { costlyRequests } from '@esp/test-helpers/costly-requests'
import { buildAllInOne, makeWorld, problemWith } from '@esp/test-helpers/fuzz-harness'
import { readOperations } from '@esp/test-helpers/openapi-fuzz'
import { makeDevice } from '@esp/test-helpers/platform'

v8.setFlagsFromString('--expose-gc')
const collect = vm.runInNewContext('gc') as () => void

/**
 * The most CPU one request may cost this process. The worst measured here is about a tenth of it
 * on a quiet machine (the bench's `cost` case states the figures); the margin is for a CI machine
 * running other test files beside this one.
 */
const CPU_BUDGET_MS = 1_500
/** Live heap growth allowed over the whole run: answers are dropped as they come. */
const HEAP_GROWTH_MB = 64

const HOUR = 3_600_000

t.setTimeout(600_000)

t.test('the costliest request of every GET operation stays within its CPU budget', async (t) => {
  const harness = await buildAllInOne(t)
  const { app, database } = harness
  const world = await makeWorld(harness)
  const owner = world.owner
  const device = await makeDevice(database, owner.id, { name: 'four decades', mac: '02:00:00:00:00:33' })
  const sensors = (await database.sql<{ id: number }[]>`select id from sensors order by id limit 3`).map((r) => r.id)
  const post = async (times: number[]): Promise<void> => {
    for (let at = 0; at < times.length; at += 2_000) {
      const data = times.slice(at, at + 2_000).map((time, i) => ({
        recorded_at: new Date(time).toISOString(),
        sensors: sensors.map((id) => ({ id, value: 10 + ((i * 7 + id) % 23) }))
      }))
      const res = await app.inject({ method: 'POST', url: `/v0/devices/${device}/readings`, headers: bearer(owner.token), payload: { data } })
      if (res.statusCode !== 200) throw new Error(`posting readings: ${res.statusCode} ${res.body}`)
    }
  }
  const now = Math.floor(Date.now() / HOUR) * HOUR
  // Sparse decades, a year of hours and a day every 10 s: every tier and the raw path have work.
  await post([Date.UTC(1990, 0, 1, 6), Date.UTC(2000, 5, 1), Date.UTC(2010, 6, 15, 12)])
  await post(Array.from({ length: 365 * 24 }, (_, i) => now - (365 * 24 - i) * HOUR))
  await post(Array.from({ length: 8_640 }, (_, i) => now - 3 * 24 * HOUR + i * 10_000))

  const document = (await app.inject({ url: '/docs/json' })).json()
  const ids = world.fixtures.ids
  const requests = costlyRequests(readOperations(document), (_operation, parameter) => {
    if (parameter.name === 'device_id' || (parameter.name === 'id' && _operation.path.startsWith('/v0/devices/'))) return String(device)
    const named = ids.get(parameter.name) ?? ids.get(_operation.path.split('/')[2] ?? '') ?? world.fixtures.all
    return named[0] ?? '1'
  })
  t.ok(requests.length > 50, `${requests.length} requests over the document's GET operations`)
  t.ok(requests.some((r) => /sensor_ids=all.*timezone=|timezone=.*sensor_ids=all/.test(r.url)), 'the worst forms of the readings route are among them')

  collect()
  const heapBefore = process.memoryUsage().heapUsed
  const worst = new Map<string, { ms: number, url: string, status: number }>()
  const problems: string[] = []
  for (const request of requests) {
    const before = process.cpuUsage()
    const res = await app.inject({ url: request.url, headers: bearer(owner.token) })
    const used = process.cpuUsage(before)
    const ms = (used.user + used.system) / 1000
    const problem = problemWith({ status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: res.body }, false)
    if (problem !== null) problems.push(`${request.url}: ${problem}: ${res.body.slice(0, 200)}`)
    if (ms > CPU_BUDGET_MS) problems.push(`${request.url}: ${ms.toFixed(0)} ms of CPU, more than ${CPU_BUDGET_MS}`)
    const key = `${request.operation.method} ${request.operation.path}`
    if ((worst.get(key)?.ms ?? -1) < ms) worst.set(key, { ms, url: request.url, status: res.statusCode })
  }
  collect()
  const heapGrowthMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20
  const ranking = [...worst.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8)
  t.comment(`worst CPU per operation: ${ranking.map(([key, w]) => `${key} ${w.ms.toFixed(0)} ms (${w.status}, ${w.url})`).join('; ')}`)
  t.same(problems, [], 'every answer below 500, in the error shape when a 4xx, and within the CPU budget')
  t.ok(heapGrowthMb < HEAP_GROWTH_MB, `live heap grew ${heapGrowthMb.toFixed(1)} MB over ${requests.length} requests (at most ${HEAP_GROWTH_MB})`)
  const alive = await app.inject({ url: '/health/live' })
  t.equal(alive.statusCode, 200, 'the process is alive and answering')
})
