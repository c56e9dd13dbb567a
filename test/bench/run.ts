/**
 * `pnpm bench [ingest|mqtt|rollups|reads|replicas|worldmap|explorer|export|soak|fuzz|cost|area] [--quick]`: every figure next to a baseline measured in the same
 * run on the same database, written to docs/benchmarks.json and the table in docs/benchmarks.md.
 * A run of some cases keeps the other cases' figures from the last run in both files.
 * Without DATABASE_URL the embedded PostgreSQL is used. `--quick` only keeps the cases working.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { benchArea, type AreaFigures } from './area.js'
import { benchCost, type CostFigures } from './cost.js'
import { benchExplorer, type ExplorerFigures } from './explorer.js'
import { benchExport, type ExportFigures } from './export.js'
import { benchIngest, type IngestFigures } from './ingest.js'
import { benchCluster, type ClusterFigures } from './cluster.js'
import { benchMqtt, type MqttFigures } from './mqtt.js'
import { benchReads, type ReadFigures } from './reads.js'
import { benchReplicas, type ReplicaFigures } from './replicas.js'
import { benchRollups, type RollupFigures } from './rollups.js'
import { startPlatform } from './setup.js'
import { benchSoak, type SoakFigures } from './soak.js'
import { benchFuzz, type FuzzFigures } from './fuzz.js'
import { benchWorldMap, type WorldMapFigures } from './worldmap.js'
import { progress, round } from './stats.js'

const args = process.argv.slice(2)
const quick = args.includes('--quick')
const cases = args.filter((a) => !a.startsWith('--'))
const wanted = (name: string): boolean => cases.length === 0 || cases.includes(name)
const root = path.resolve(import.meta.dirname, '..', '..')

const platform = await startPlatform(process.env.DATABASE_URL)
const results: { machine: string, quick: boolean, at: string, ingest?: IngestFigures, mqtt?: MqttFigures, cluster?: ClusterFigures, rollups?: RollupFigures, reads?: ReadFigures, replicas?: ReplicaFigures, worldMap?: WorldMapFigures, explorer?: ExplorerFigures, export?: ExportFigures, soak?: SoakFigures, fuzz?: FuzzFigures, cost?: CostFigures, area?: AreaFigures } = {
  machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  quick,
  at: new Date().toISOString()
}
try {
  // The export first: its RSS is read in this process, before the other cases have grown the heap.
  if (wanted('export')) results.export = await benchExport(platform, quick)
  if (wanted('ingest')) results.ingest = await benchIngest(platform, quick)
  if (wanted('mqtt')) results.mqtt = await benchMqtt(platform, quick)
  if (wanted('cluster')) results.cluster = await benchCluster(platform, quick)
  if (wanted('rollups')) results.rollups = await benchRollups(platform, quick)
  if (wanted('reads')) results.reads = await benchReads(platform, quick)
  // On a primary and a streaming replica of its own, not on the platform's database.
  if (wanted('replicas')) results.replicas = await benchReplicas(quick)
  if (wanted('worldmap')) results.worldMap = await benchWorldMap(platform, quick)
  if (wanted('explorer')) results.explorer = await benchExplorer(platform, quick)
  if (wanted('soak')) results.soak = await benchSoak(platform, quick)
  if (wanted('fuzz')) results.fuzz = await benchFuzz(platform, quick)
  if (wanted('cost')) results.cost = await benchCost(platform, quick)
  // Last: its 43.2 million readings (gigabytes) would weigh on every case after it.
  if (wanted('area')) results.area = await benchArea(platform, quick)
} finally {
  await platform.close()
}

// A run of some cases keeps the figures of the others from the last full-size run.
const suffix = quick ? '.quick' : ''
const jsonFile = path.join(root, 'docs', `benchmarks${suffix}.json`)
if (cases.length > 0 && existsSync(jsonFile)) {
  const last = JSON.parse(readFileSync(jsonFile, 'utf8')) as Record<string, unknown>
  for (const [key, value] of Object.entries(last)) if (!(key in results)) Object.assign(results, { [key]: value })
}

const meets = (ok: boolean): string => ok ? 'yes' : '**no**'
const lines = [
  '# Benchmarks',
  '',
  `Measured ${results.at} on ${results.machine}${quick ? ' (--quick sizes: not figures)' : ''}, with \`pnpm bench${cases.length > 0 ? ` ${cases.join(' ')}` : ''}\`${cases.length > 0 ? '; the other cases\' figures are those of their last run (docs/benchmarks.json)' : ''}.`,
  'Each figure stands next to a baseline measured in the same run on the same database. What each case measures is at the end of this page; the history of findings and profiles is [test/bench/findings.md](../test/bench/findings.md).',
  ''
]
if (results.ingest !== undefined) {
  const i = results.ingest
  lines.push('## HTTP ingest (case 1)', '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| ${i.batch500.devices} devices posting batches of 500, ack after commit | ${i.batch500.valuesPerSecond} readings/s | COPY ${i.copy.rowsPerSecond} rows/s | ${i.ratioToCopy} | >= 0.5 | ${meets(i.ratioToCopy >= 0.5)} |`,
    `| ${i.kit12.devices} kits posting one timestamp of 12 sensors | ${i.kit12.postsPerSecond} posts/s, ${i.kit12.valuesPerSecond} readings/s | | | | |`,
    `| the same batches to a bare Fastify route that only parses and COPYs (a ceiling for any platform on this machine, not a target) | ${i.bareRoute.valuesPerSecond} readings/s | COPY ${i.copy.rowsPerSecond} rows/s | ${i.bareRoute.ratioToCopy} | | |`,
    `| the platform against that bare route | | bare route ${i.bareRoute.valuesPerSecond} readings/s | ${round(i.batch500.valuesPerSecond / i.bareRoute.valuesPerSecond, 3)} | | |`, '',
    '## Memory (case 6)', '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| peak RSS of the all-in-one process (api, ingest, exporter) under case 1's load | ${i.memory.peakRssMb} MB | idle ${i.memory.idleRssMb} MB | ${round(i.memory.peakRssMb / i.memory.idleRssMb)} | <= 300 MB | ${meets(i.memory.peakRssMb <= 300)} |`, '')
}
if (results.mqtt !== undefined) {
  const m = results.mqtt
  lines.push('## MQTT ingest (case 2)', '',
    `${m.kits} kits on the embedded broker, ${m.messagesPerKit} firmware \`readings/raw\` messages each (${m.qos1.values} values).`, '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| QoS 1, PUBACK after commit: values/s | ${m.qos1.valuesPerSecond} | COPY ${m.copy.rowsPerSecond} rows/s | ${m.qos1RatioToCopy} | >= 0.3 | ${meets(m.qos1RatioToCopy >= 0.3)} |`,
    `| QoS 1: messages/s | ${m.qos1.messagesPerSecond} | bare Aedes ${m.bare.qos1.messagesPerSecond} msg/s | ${m.qos1RatioToBare} | >= 0.5 | ${meets(m.qos1RatioToBare >= 0.5)} |`,
    `| QoS 0, until stored: values/s | ${m.qos0.valuesPerSecond} | COPY ${m.copy.rowsPerSecond} rows/s | ${m.qos0RatioToCopy} | >= 0.3 | ${meets(m.qos0RatioToCopy >= 0.3)} |`,
    `| QoS 0: messages/s | ${m.qos0.messagesPerSecond} | bare Aedes ${m.bare.qos0.messagesPerSecond} msg/s | ${m.qos0RatioToBare} | >= 0.5 | ${meets(m.qos0RatioToBare >= 0.5)} |`,
    `| QoS 1 on a bare Aedes that only parses and COPYs, PUBACK after commit (a ceiling for any storing broker on this machine, not a target): messages/s | ${m.bareStoring.messagesPerSecond} | bare Aedes ${m.bare.qos1.messagesPerSecond} msg/s | ${round(m.bareStoring.messagesPerSecond / m.bare.qos1.messagesPerSecond, 3)} | | |`,
    `| the platform's QoS 1 against that storing bare broker: messages/s | ${m.qos1.messagesPerSecond} | storing bare broker ${m.bareStoring.messagesPerSecond} msg/s | ${round(m.qos1.messagesPerSecond / m.bareStoring.messagesPerSecond, 3)} | | |`, '')
}
if (results.cluster !== undefined) {
  const c = results.cluster
  lines.push('## Broker cluster (issue 24)', '',
    `${c.kits} kits, ${c.messagesPerKit} firmware \`readings/raw\` messages each at QoS 1 (${c.cluster.values} values). Clustered: three RabbitMQ nodes (quorum queue) and two ingest instances, all on this machine; the baseline is the platform's embedded broker.`, '',
    '| measure | value | baseline | ratio |', '|---|---|---|---|',
    `| clustered, until every reading is stored: values/s | ${c.cluster.valuesPerSecond} | embedded ${c.embedded.valuesPerSecond} values/s | ${c.ratio} |`,
    `| clustered, to the last PUBACK (stored in the quorum queue): messages/s | ${c.clusterAcked.messagesPerSecond} | embedded ${c.embedded.messagesPerSecond} msg/s (PUBACK after commit) | ${round(c.clusterAcked.messagesPerSecond / c.embedded.messagesPerSecond, 3)} |`, '')
}
if (results.rollups !== undefined) {
  const r = results.rollups
  lines.push('## Rollup queries (case 3)', '',
    `A device with ${r.sensors} sensors and ${r.days} days of one-minute readings (${r.values} readings), loaded through the write path at ${r.loadValuesPerSecond} readings/s, adding ${round(r.storage.bytes / 2 ** 20, 1)} MB to the database (${r.storage.bytesPerReading} bytes a reading with its indexes and rollup tiers); the queries ask for its pressure sensor.`, '',
    `| rollup | range | ${['avg', 'max', 'min', 'sum', 'count', 'dev', 'first', 'last'].map((f) => `${f} p50/p95 ms`).join(' | ')} |`,
    `|---|---|${'---|'.repeat(8)}`)
  for (const rollup of ['1d', '1h', '7m', '1w', '1M']) {
    const row = r.queries.filter((q) => q.rollup === rollup)
    lines.push(`| ${rollup} | ${row[0]?.range ?? ''} | ${row.map((q) => `${q.p50} / ${q.p95}`).join(' | ')} |`)
  }
  const worstP95 = Math.max(...r.queries.filter((q) => q.rollup !== '1d').map((q) => q.p95))
  lines.push('',
    '| target | figure | met |', '|---|---|---|',
    `| 1d over the year, p50 <= 3 ms | ${r.http1dAvgP50} ms (avg) | ${meets(r.http1dAvgP50 <= 3)} |`,
    `| any rollup over a month, p95 <= 20 ms | worst ${worstP95} ms | ${meets(worstP95 <= 20)} |`,
    `| >= 50x over the same aggregation in SQL over raw rows | ${r.speedup1d}x (raw ${r.raw1dP50} ms p50) | ${meets(r.speedup1d >= 50)} |`, '')
  lines.push('Local days (`timezone`): 1d avg over the year, each run alternating with the same request in UTC.', '',
    '| timezone | served from | p50 / p95 ms | UTC p50 ms | ratio | target | met |', '|---|---|---|---|---|---|---|',
    ...r.zoned.map((z) => `| ${z.zone} | ${z.source} | ${z.p50} / ${z.p95} | ${z.utcP50} | ${z.ratioToUtc} | ${z.zone === 'Europe/Madrid' ? '<= 2x UTC' : ''} | ${z.zone === 'Europe/Madrid' ? meets(z.ratioToUtc <= 2) : ''} |`), '')
  const m = r.severalSensors
  lines.push(`Several sensors: the ${m.sensors} sensors at 1h over the month in one request (\`sensor_ids=all\`), alternating with the ${m.sensors} one-sensor requests one after another.`, '',
    '| request | p50 ms | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| one request, ${m.sensors} series | ${m.oneRequestP50} | ${m.sensors} requests one after another, p50 ${m.separateP50} ms | ${m.ratio} | < 1 | ${meets(m.ratio < 1)} |`, '')
}
if (results.reads !== undefined) {
  const r = results.reads
  // Figures kept from a run before wrk (docs/benchmarks.json) have no slices nor bare latencies.
  const slices = r.slices ?? 5
  lines.push('## Reads (case 4)', '',
    `wrk (C, one thread), ${r.concurrency} keep-alive connections for ${r.seconds} s per route and caller, ${r.devices} devices with 12 latest values each, ${r.devicesPerOwner} to an owner; anonymous, and with a citizen's Bearer token. ` +
    `Baseline: a bare Fastify one-row lookup on the same pool, measured for each route in ${slices} slice${slices === 1 ? '' : 's'} of ${round(r.seconds / slices, 1)} s alternating with the route's anonymous and Bearer slices (all routes: ${r.baseline.requestsPerSecond}/s, p50 ${r.baseline.p50} ms, p99 up to ${r.baseline.p99} ms). ` +
    'Requests/s are each side\'s requests over its seconds; p50 and p99 the slices\' wrk percentiles, weighted by their requests. Targets of issue 37. Rate limits on, with a limit configured for the run.', '',
    '| route | bare requests/s | bare p50 (p99) ms | anonymous requests/s | p50 (p99) ms | ratio to bare | target | met | Bearer requests/s | p50 (p99) ms | Bearer / anonymous | target >= 0.85 (devices, page, users) |', '|---|---|---|---|---|---|---|---|---|---|---|---|')
  for (const route of r.routes) {
    const a = route.anonymous
    const b = route.bearer
    const bare = route.bare === undefined ? '' : `${route.bare.p50} (${route.bare.p99})`
    lines.push(`| ${route.route} | ${route.bareRequestsPerSecond} | ${bare} | ${a.requestsPerSecond} | ${a.p50} (${a.p99}) | ${a.ratioToBaseline} | ${route.target === null ? '' : `>= ${route.target}`} | ${route.target === null ? '' : meets(a.ratioToBaseline >= route.target)} | ${b.requestsPerSecond} | ${b.p50} (${b.p99}) | ${route.bearerToAnonymous} | ${route.floor === null ? '' : meets(route.bearerToAnonymous >= 0.85)} |`)
  }
  lines.push('', 'A read in full, as every request was made before representations were kept (issue 37) and as a miss still is: the same read statement, reference data and presenter, served by the bare Fastify server with nothing around them (no hooks, no schema serializer, no ETag), anonymous, in the same alternating slices (wrk). The platform\'s route against it is what keeping the bytes by their revisions gains.', '',
    '| route | read in full: requests/s | p50 (p99) ms | read in full / bare | platform / read in full |', '|---|---|---|---|---|')
  for (const route of r.routes) {
    const f = route.floor
    if (f === null) continue
    lines.push(`| ${route.route} | ${f.requestsPerSecond} | ${f.p50} (${f.p99}) | ${f.ratioToBaseline} | ${round(route.anonymous.requestsPerSecond / f.requestsPerSecond, 3)} |`)
  }
  lines.push('')
}
if (results.replicas !== undefined) {
  const r = results.replicas
  lines.push('## Read replicas (case 4, DATABASE_READ_URL)', '',
    `The api's anonymous read mix (${r.urls} URLs in turn: device pages, a page of the device list, a day of hourly and a month of daily history of ${r.historyDevices} devices with ${r.readings} readings; ${r.devices} devices with 12 latest values) by ${r.concurrency} keep-alive clients, ${r.seconds} s on each side in alternating slices: ` +
    'an api on the primary alone, and an api with one streaming replica in DATABASE_READ_URL, in the same process on the same primary. Both servers of the pair run on this machine, so they share its cores with the api and the load generator.', '',
    '| measure | requests/s | p50 (p99) ms | baseline | ratio | replica served |', '|---|---|---|---|---|---|',
    `| with one streaming replica | ${r.withReplica.requestsPerSecond} | ${r.withReplica.p50} (${r.withReplica.p99}) | primary alone ${r.primaryOnly.requestsPerSecond}/s, p50 ${r.primaryOnly.p50} (${r.primaryOnly.p99}) ms | ${r.ratio} | ${Math.round(r.replicaShare * 100)} % |`, '')
}
if (results.worldMap !== undefined) {
  const w = results.worldMap
  lines.push('## World map (case 4)', '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| GET /v0/devices/world_map, ${w.devices} devices, gzip, p50 (p95) | ${w.p50} ms (${w.p95} ms) | GET /health/live p50 ${w.baselineP50} ms | ${w.ratioToBaseline} | <= 20 ms | ${meets(w.p50 <= 20)} |`,
    `| compressed size | gzip ${w.gzipBytes} bytes, br ${w.brBytes} bytes | JSON ${w.jsonBytes} bytes | ${round(w.gzipBytes / w.jsonBytes)} | <= 1 MB | ${meets(w.gzipBytes <= 1_000_000)} |`,
    `| the contract's fields only (every other field moved elsewhere), gzip | ${w.contractOnlyGzipBytes} bytes | the map's gzip ${w.gzipBytes} bytes | ${round(w.contractOnlyGzipBytes / w.gzipBytes)} | <= 1 MB | ${meets(w.contractOnlyGzipBytes <= 1_000_000)} |`,
    `| first request after a change (rebuild) | ${w.rebuildMs} ms | | | | |`, '')
}
if (results.explorer !== undefined) {
  const x = results.explorer
  const d = x.device
  // --quick sizes say nothing of the targets.
  const check = (ok: boolean): string => quick ? 'not checked (--quick)' : meets(ok)
  const kb = (bytes: number): string => `${round(bytes / 1000, 1)} KB`
  const timed = (what: string, t: { p50: number, max: number, ratioToBaseline: number }, target: number): string =>
    `| ${what}, p50 (max) | ${t.p50} ms (${t.max} ms) | GET /health/live loaded, p50 ${x.baseline.p50} ms | ${t.ratioToBaseline} | p50 <= ${target} ms | ${check(t.p50 <= target)} |`
  const profile = (entries: Record<string, number>): string => Object.entries(entries).map(([k, v]) => `${k} ${v}`).join(', ')
  lines.push('## Explorer (case 7)', '',
    `${x.browser} (headless, ${x.runs} runs after one warm-up, each in a fresh context: a cold cache), viewport 1280×4200 so that every chart of a device is in view; times are the page's own performance marks, ms from navigation start. ` +
    `The map: ${x.devices} public devices with 12 latest values, drawn from GET /v0/devices/compact_map (the panel counted ${x.shownDevices.toLocaleString('en-US')}). The device: a kit of ${d.sensors} sensors with ${d.days} days of 10-minute readings up to the current hour (${d.values} readings, written through the write path at ${d.loadValuesPerSecond} readings/s); ` +
    `the year draws ${d.year.points} buckets of ${d.year.rollup} a chart, the month ${d.month.points} of ${d.month.rollup}.`, '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| first load, bytes received: the document, and the ${x.firstLoad.files.length - 1} scripts and stylesheets asked for before the map is ready | ${kb(x.firstLoad.bytes)} (document ${x.firstLoad.document}, scripts ${x.firstLoad.scripts}, stylesheets ${x.firstLoad.stylesheets} bytes) | | | <= 250 KB | ${check(x.firstLoad.bytes <= 250_000)} |`,
    `| the map's data, GET /v0/devices/compact_map, gzip (as the browser received it: ${x.compactMapReceivedEncoding} ${kb(x.compactMapReceivedBytes)}) | ${kb(x.compactMapGzipBytes)} | GET /v0/devices/world_map, gzip ${kb(x.worldMapGzipBytes)} | ${round(x.compactMapGzipBytes / x.worldMapGzipBytes)} | <= 150 KB | ${check(x.compactMapGzipBytes <= 150_000)} |`,
    `| beside it, for information: the countries asset | ${kb(x.countriesBytes)} | | | | |`,
    timed(`the map of ${x.devices} devices interactive (esp:map-ready), from the compact map`, x.map, 500),
    timed(`the device page, last year: ${d.sensors} charts drawn (esp:charts-drawn)`, d.year, 1000),
    timed(`the device page, last month: ${d.sensors} charts drawn (esp:charts-drawn)`, d.month, 1000), '',
    `Every run (ms): map ${x.map.runs.join(', ')}; year ${d.year.runs.join(', ')}; month ${d.month.runs.join(', ')}; baseline ${x.baseline.runs.join(', ')}. ` +
    `Where the time of the median run goes (ms from navigation start): map: ${profile(x.profile.map)}; year: ${profile(x.profile.year)}; month: ${profile(x.profile.month)}. ` +
    `Encodings (Accept-Encoding asked, Content-Encoding got): ${x.firstLoad.encodings.join('; ')}.`, '')
}
if (results.export !== undefined) {
  const e = results.export
  lines.push('## Streamed export (case 5)', '',
    `GET /v0/devices/:id/readings/export over HTTP: ${e.days} days of 1-minute readings of ${e.sensors} sensors (${e.values} values); served by the api service on its own as production runs it (built, plain node, \`NODE_OPTIONS=${e.nodeOptions}\` from infra/compose.yaml); its RSS at rest before: ${e.baselineRssMb} MB, peak RSS as the kernel counts it (VmHWM).`, '',
    '| measure | values/s | baseline | ratio | peak RSS (growth) | target | met |', '|---|---|---|---|---|---|---|',
    ...[e.csv, e.ndjson].map((r) => `| ${r.format}, ${r.bytes} bytes in ${r.seconds} s | ${r.valuesPerSecond} | bare COPY ${e.copy.valuesPerSecond} values/s | ${round(r.valuesPerSecond / e.copy.valuesPerSecond)} | ${r.peakRssMb} MB (+${round(r.peakRssMb - e.baselineRssMb, 1)} MB) | >= 1,000,000 values/s, <= 200 MB | ${meets(r.valuesPerSecond >= 1_000_000 && r.peakRssMb <= 200)} |`),
    // The formats of issue 23 against today's CSV of the same range, in the same run.
    `| csv_wide (a line a minute, a column per sensor), ${e.csvWide.bytes} bytes in ${e.csvWide.seconds} s | ${e.csvWide.valuesPerSecond} | csv ${e.csv.valuesPerSecond} values/s | ${round(e.csvWide.valuesPerSecond / e.csv.valuesPerSecond)} | ${e.csvWide.peakRssMb} MB (+${round(e.csvWide.peakRssMb - e.baselineRssMb, 1)} MB) | | |`,
    `| parquet (${e.parquet.rowGroups} row groups), ${e.parquet.bytes} bytes in ${e.parquet.seconds} s | ${e.parquet.valuesPerSecond} | csv ${e.csv.valuesPerSecond} values/s | ${round(e.parquet.valuesPerSecond / e.csv.valuesPerSecond)} | ${e.parquet.peakRssMb} MB (+${round(e.parquet.peakRssMb - e.baselineRssMb, 1)} MB) | >= 1,000,000 values/s, >= csv, <= 200 MB | ${meets(e.parquet.valuesPerSecond >= 1_000_000 && e.parquet.valuesPerSecond >= e.csv.valuesPerSecond && e.parquet.peakRssMb <= 200)} |`,
    // The export across devices, of the same rows: by time, each window's rows sorted by PostgreSQL.
    ...[e.acrossDevices.csv, e.acrossDevices.parquet].map((r) => `| across devices (\`/v0/readings/export?device_ids=…\`), ${r.format}, ${r.bytes} bytes in ${r.seconds} s | ${r.valuesPerSecond} | the device's own ${r.format} ${(r.format === 'csv' ? e.csv : e.parquet).valuesPerSecond} values/s | ${round(r.valuesPerSecond / (r.format === 'csv' ? e.csv : e.parquet).valuesPerSecond)} | ${r.peakRssMb} MB (+${round(r.peakRssMb - e.baselineRssMb, 1)} MB) | constant memory (<= 200 MB) | ${meets(r.peakRssMb <= 200)} |`), '',
    'Each peak is its run\'s own: VmHWM is reset (`/proc/<pid>/clear_refs`) before each export.', '')
}
if (results.soak !== undefined) {
  const s = results.soak
  const at = (minute: number): string => s.minuteRssMb[minute - 1] === undefined ? 'not reached' : `${s.minuteRssMb[minute - 1]} MB`
  lines.push('## Memory soak (case 6)', '',
    `\`pnpm start\` (node ${s.nodeArgs}) as a process of its own on the bench's database: ${s.httpDevices} kits posting one timestamp of 12 sensors over HTTP and ${s.mqttKits} kits publishing \`readings/raw\` at QoS 1, at once. ` +
    `Capacity, both as fast as it answers for ${s.capacity.seconds} s: ${s.capacity.httpPostsPerSecond} posts/s and ${s.capacity.mqttMessagesPerSecond} messages/s (${s.capacity.valuesPerSecond} readings/s). ` +
    `The soak sent half of each for ${s.minutes} minutes (\`SOAK_MINUTES\`): ${s.load.httpPostsPerSecond} posts/s and ${s.load.mqttMessagesPerSecond} messages/s (${s.load.valuesPerSecond} readings/s), ${s.load.failures} failed, ${s.load.lateTicks} ticks late. RSS is the process's VmRSS; the peak its VmHWM.`, '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    ...[1, 5, 15, 30].map((m) => `| RSS after ${m} minute${m === 1 ? '' : 's'} of load | ${at(m)} | started, idle ${s.startRssMb} MB | ${s.minuteRssMb[m - 1] === undefined ? '' : round((s.minuteRssMb[m - 1] ?? 0) / s.startRssMb)} | <= 300 MB | ${s.minuteRssMb[m - 1] === undefined ? '' : meets((s.minuteRssMb[m - 1] ?? 0) <= 300)} |`),
    `| peak RSS (VmHWM) | ${s.peakRssMb} MB | started, idle ${s.startRssMb} MB | ${round(s.peakRssMb / s.startRssMb)} | <= 300 MB | ${meets(s.peakRssMb <= 300)} |`,
    `| RSS when the load stopped, and after ${s.idleSeconds} s idle | ${s.endRssMb} MB, ${s.afterRssMb} MB | started, idle ${s.startRssMb} MB | ${round(s.afterRssMb / s.startRssMb)} | near the start | |`,
    '', `RSS minute by minute: ${s.minuteRssMb.join(', ')} MB.`, '')
}
if (results.fuzz !== undefined) {
  const f = results.fuzz
  lines.push('## Memory under generated bad requests (case 6)', '',
    `The requests of test/fuzz/openapi.test.ts (${f.runs} runs of each of ${f.operations} operations, seed ${f.seed}, and the filter sweep: ${f.requests} requests; \`FUZZ_LONG=1\` for 200 runs) over real sockets, four at a time, to \`pnpm start\` (node ${f.nodeArgs}) as a process of its own, rate limits lifted: ${f.seconds} s, answers ${Object.entries(f.statuses).sort().map(([k, v]) => `${k} ${v}`).join(', ')}.`, '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| peak RSS (VmHWM) | ${f.peakRssMb} MB | before, idle ${f.beforeRssMb} MB | ${round(f.peakRssMb / f.beforeRssMb)} | <= 300 MB | ${meets(f.peakRssMb <= 300)} |`,
    `| RSS after the last answer, and after ${f.idleSeconds} s idle | ${f.endRssMb} MB, ${f.afterRssMb} MB | before, idle ${f.beforeRssMb} MB | ${round(f.afterRssMb / f.beforeRssMb)} | near the start | |`,
    `| V8 heap in use (of reserved) | after ${f.afterHeapMb.used} (${f.afterHeapMb.total}) MB | before ${f.beforeHeapMb.used} (${f.beforeHeapMb.total}) MB | ${round(f.afterHeapMb.used / f.beforeHeapMb.used)} | | |`, '',
    ...(f.noAnswer.length === 0 ? [] : ['Requests that got no HTTP answer (the first few):', '', ...f.noAnswer.map((n) => `- \`${n.replace(/`/g, "'")}\``), '']))
}
if (results.cost !== undefined) {
  const c = results.cost
  const a = c.adversarial
  lines.push('## Bounded cost (issue 33)', '',
    `\`pnpm start\` (node ${c.nodeArgs}) as a process of its own, default limits. The costliest request of each GET operation of \`/docs/json\`, drawn as test/fuzz/cost.test.ts draws them (1970 to 2200, every rollup and function, \`sensor_ids=all\`, zones with odd offsets, the largest page), against a device with readings from 1990, a year of hours and a day every 10 s; CPU is the process's own (utime + stime), each worst request run ${c.routes[0]?.runs ?? 1} times, the baseline (\`${c.baseline.url}\`) ${c.baseline.runs} times.`, '',
    'The longest block is the event loop\'s longest delay while the request ran (prom-client\'s 10 ms timer): what it makes every other request wait.', '',
    '| operation | costliest request | status | CPU ms | baseline CPU ms | ratio | longest block ms |', '|---|---|---|---|---|---|---|',
    ...c.routes.map((r) => `| ${r.operation} | \`${r.url.replace(/\|/g, '%7C')}\` | ${r.status} | ${r.cpuMs} | ${c.baseline.cpuMs} | ${r.ratioToBaseline} | ${r.blockMs ?? ''} |`), '',
    `A signed-in caller (an admin, unthrottled) reading \`GET /v0/devices/:id\` with wrk (2 connections, ${a.seconds} s), alone and while four anonymous addresses send the worst readings requests, a whole-world export and 4.8 MB nested bodies at their rate limit (90 a minute) and a fifth holds 20 slow bodies. Attackers' answers: ${Object.entries(a.attackerStatuses).sort().map(([k, v]) => `${k} ${v}`).join(', ')}.`, '',
    '| measure | value | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| the caller's p99 under attack | ${a.attacked.p99} ms (p50 ${a.attacked.p50} ms, ${a.attacked.requestsPerSecond}/s) | alone ${a.quiet.p99} ms (p50 ${a.quiet.p50} ms, ${a.quiet.requestsPerSecond}/s) | ${a.p99Ratio} | <= 4 | ${meets(a.p99Ratio <= 4)} |`,
    ...(a.loopDelay === undefined ? [] : [`| the event loop's longest delay under attack (p99) | ${a.loopDelay.maxMs} ms (${a.loopDelay.p99Ms} ms) | | | | |`]),
    `| the caller's answers other than 2xx under attack (503 among them) | ${a.attacked.non2xx} | alone ${a.quiet.non2xx} | | 0 | ${meets(a.attacked.non2xx === 0)} |`, '')
}
if (results.area !== undefined) {
  const a = results.area
  const s = a.statistics
  const g = a.interpolation
  // --quick sizes say nothing of the targets.
  const check = (ok: boolean): string => quick ? 'not checked (--quick)' : meets(ok)
  const callers = [...new Set([s.caller, g.caller])].join(' and ')
  lines.push('## Area statistics and IDW grid (issue 38)', '',
    `${a.devices.toLocaleString('en-US')} public outdoor devices spread over a city's box (\`bbox=${a.bbox.join(',')}\`), each with one PM 2.5 sensor (${a.sensorId}, measurement ${a.measurementId}) and ${a.days} days of one-minute readings (${a.rows.toLocaleString('en-US')} readings, ${a.from} to ${a.to}), ` +
    'loaded in SQL as the write path would store them (raw rows, hourly and daily tiers, components, latest values), then vacuumed, analyzed and checkpointed. ' +
    `wrk, ${a.connections} connection for ${a.seconds} s per route, ${callers}. The statistics route: \`rollup=1h\` over the ${a.days} days with \`percentiles=10,90\` (${s.windows} windows, ${s.bytes} bytes); its baseline the same statistics in SQL over the raw rows (per device hourly avg, then per hour count, avg, stddev_samp, min, max, percentile_cont), p50 of ${a.raw.runs.length} run${a.raw.runs.length === 1 ? '' : 's'} (${a.raw.runs.join(', ')} ms). ` +
    `The IDW grid: the last day (${g.steps} step${g.steps === 1 ? '' : 's'}), \`cell_size=${g.cellSizeKm}\` km (100 cells across the box at its middle latitude): ${g.features.toLocaleString('en-US')} features, ${g.bytes} bytes.`, '',
    '| measure | p50 ms | baseline | ratio | target | met |', '|---|---|---|---|---|---|',
    `| GET /v0/readings/statistics, ${a.devices} devices, 1h over ${a.days} days, p50 (p99) | ${s.p50} (${s.p99}) | raw SQL p50 ${a.raw.p50} ms | ${s.ratioRawToRoute} (raw / route) | ≤ 150 ms and ≥ 20× raw SQL | ${check(s.p50 <= 150 && s.ratioRawToRoute >= 20)} |`,
    `| the same, its first request: no closed day kept yet, every hour read from the hourly tier | ${s.coldMs} | raw SQL p50 ${a.raw.p50} ms | ${s.ratioRawToCold} (raw / route) | | |`,
    `| GET /v0/readings/interpolation, ${a.devices} devices, a day, ${g.features.toLocaleString('en-US')} cells, p50 (p99) | ${g.p50} (${g.p99}) | GET /health/live p50 ${a.health.p50} ms | ${g.ratioToBaseline} | ≤ 200 ms | ${check(g.p50 <= 200)} |`,
    `| the load in SQL, for information: ${a.rows.toLocaleString('en-US')} readings with their tiers, then vacuum analyze and checkpoint | ${a.load.seconds} s (+ ${a.load.settleSeconds} s settling) | | ${a.load.rowsPerSecond.toLocaleString('en-US')} readings/s | | |`,
    `| database growth, for information | ${round(a.load.bytes / 2 ** 20, 1)} MB | | ${a.load.bytesPerRow} bytes a reading | | |`, '',
    `The route's answer against the raw SQL over every window, largest relative difference: ${Object.entries(s.maxRelativeDifference).map(([k, v]) => `${k} ${v.toExponential(1)}`).join(', ')} (the bench stops when the middle window's median differs by more than 1e-9).`, '')
}
// What each case measures, and where the history of findings is (test/bench/findings.md, not copied here).
lines.push(readFileSync(path.join(import.meta.dirname, 'cases.md'), 'utf8').trimEnd())
mkdirSync(path.join(root, 'docs'), { recursive: true })
writeFileSync(jsonFile, `${JSON.stringify(results, null, 2)}\n`)
writeFileSync(path.join(root, 'docs', `benchmarks${suffix}.md`), `${lines.join('\n')}\n`)
progress(`wrote docs/benchmarks${suffix}.md`)
console.log(lines.join('\n'))
