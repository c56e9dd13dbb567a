import { openTimescalePglite } from './src/timeseries/pglite.js'
import { writeReadings, timescaleEngine } from './src/timeseries/index.js'
const h = await openTimescalePglite()
const r = h.runner
const q = async (s: string, p: unknown[] = []) => { try { return await r.query(s, p) } catch (e) { return 'ERR ' + (e as Error).message } }
await r.query("insert into users (id, username, email) values (1, 'u', 'u@x')")
await r.query("insert into devices (id, owner_id, name) values (1, 1, 'd')")
await r.query("insert into sensors (id, name) values (101, 's1')")
const w = async (rows: [string, number][]) => { const res = await writeReadings(r, timescaleEngine(), 1, rows.map(([d, v]) => ({ deviceId: 1, sensorId: 101, recordedAt: new Date(d), value: v, rawValue: v }))); console.log('write', res.stored, res.duplicates) }
const show = async (label: string) => console.log(label, JSON.stringify(await q('select bucket, count, sum from readings_hourly order by bucket')))
await w([['2024-01-01T00:10:00Z', 1], ['2024-01-01T00:20:00Z', 3]])
console.log(await q("select compress_chunk(c) from show_chunks('readings') c"))
console.log(await q("select chunk_name, is_compressed from timescaledb_information.chunks"))
await w([['2024-01-01T00:20:00Z', 50], ['2024-01-01T00:30:00Z', 5]])
console.log(await q("select recorded_at, value from readings order by 1"))
await q("CALL refresh_continuous_aggregate('readings_hourly', NULL, NULL)")
await show('refreshed')
await w([['2024-01-01T00:40:00Z', 7]])
console.log(await q("CALL run_job(1000)"))
await show('after run_job(1000) with 3 day start offset')
console.log(await q("select alter_job(1000, config => jsonb_set(config, '{start_offset}', 'null'))"))
console.log(await q("select config from timescaledb_information.jobs where job_id = 1000"))
console.log(await q("CALL run_job(1000)"))
await show('after run_job(1000) with null start offset')
await h.close()
