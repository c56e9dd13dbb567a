import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import t from 'tap'
import fc from 'fast-check'
import { copyOut } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ExportLines } from '../../src/exports/export-lines.js'
import { formatReadingTime } from '../../src/time.js'
import { anyInstant, anyValue, feedInPieces } from './copy-chunks.js'

/** The contract's form built the slow, obvious way: what the fast formatters must agree with. */
function expectedTime (ms: number): string {
  const iso = new Date(ms).toISOString()
  return iso.endsWith('.000Z') && iso.length === 24 ? `${iso.slice(0, 19)}Z` : iso
}

t.test('formatReadingTime agrees with toISOString, milliseconds only when present', async (t) => {
  fc.assert(fc.property(fc.oneof(anyInstant, fc.integer({ min: -8.64e15, max: 8.64e15 }), fc.integer({ min: -62_167_219_200_000, max: 253_402_300_800_000 })), (ms) => {
    return formatReadingTime(ms) === expectedTime(ms)
  }), { numRuns: 20_000 })
  // The ends of the four-digit years, leap days and the century rules, each after another day.
  for (const ms of [-62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999, 253_402_300_800_000, Date.UTC(2000, 1, 29, 12), Date.UTC(1900, 2, 1), Date.UTC(2100, 1, 28, 23, 59), Date.UTC(2100, 2, 1), Date.UTC(1600, 1, 29), Date.UTC(1969, 11, 31, 23, 59, 59, 999)]) {
    formatReadingTime(ms + 3 * 86_400_000)
    t.equal(formatReadingTime(ms), expectedTime(ms))
  }
  t.equal(formatReadingTime(Date.UTC(2026, 10, 1, 7, 5, 9)), '2026-11-01T07:05:09Z')
  t.equal(formatReadingTime(Date.UTC(2026, 10, 1, 7, 5, 9, 40)), '2026-11-01T07:05:09.040Z')
})

t.test('ExportLines turns PostgreSQL\'s binary COPY into the export lines, however the bytes are cut', async (t) => {
  const database = await createTestDatabase(t)
  const sql = database.sql
  await sql`create table export_rows (recorded_at timestamptz not null, sensor_id int not null, value float8)`
  const rows = fc.sample(fc.record({
    at: anyInstant,
    sensor: fc.integer({ min: 1, max: 2_000_000_000 }),
    value: anyValue
  }), { numRuns: 3000, seed: 7 })
  await sql`insert into export_rows select * from unnest(${rows.map((r) => new Date(r.at).toISOString())}::text[]::timestamptz[], ${rows.map((r) => r.sensor)}::int[], ${rows.map((r) => r.value)}::float8[])`
  // Years outside 0000-9999 print in the long ISO form, with no day kept for them; the last
  // minute of 9999 and the first of 10000 follow each other.
  const extremes = [Date.UTC(9999, 11, 31, 23, 59), Date.UTC(10000, 0, 1), Date.UTC(10000, 0, 1, 0, 0, 0, 500), Date.UTC(-1, 0, 1)]
  await sql`insert into export_rows select to_timestamp(ms / 1000.0), 5, 1.5 from unnest(${extremes}::float8[]) as ms`
  const ordered = await sql<{ ms: string, sensor_id: number, value: number | null }[]>`
    select (extract(epoch from recorded_at) * 1000)::int8::text as ms, sensor_id, value from export_rows order by sensor_id, recorded_at`
  const csv = ['recorded_at,sensor_id,value', ...ordered.map((r) => `${expectedTime(Number(r.ms))},${r.sensor_id},${r.value === null ? '' : String(r.value)}`)].join('\n') + '\n'
  const ndjson = ordered.map((r) => JSON.stringify({ recorded_at: expectedTime(Number(r.ms)), sensor_id: r.sensor_id, value: r.value })).join('\n') + '\n'

  const copy = await copyOut(database.url, 'copy (select recorded_at, sensor_id, value from export_rows order by sensor_id, recorded_at) to stdout with (format binary)')
  const bytes = await buffer(copy.stream)
  await copy.closed

  const run = async (format: 'csv' | 'ndjson', cuts: number[]): Promise<string> => (await feedInPieces(bytes, cuts, new ExportLines(format))).toString('latin1')
  t.equal(await run('csv', []), csv, 'CSV: every row, in order, values as JavaScript prints them, null as empty')
  t.equal(await run('ndjson', []), ndjson, 'NDJSON: one JSON object a line, null values as null')
  const everyOffset = Array.from({ length: 200 }, (_, i) => i + 1)
  t.equal(await run('csv', everyOffset), csv, 'the header and the first rows fed one byte at a time')
  await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 40 }), async (cuts) => await run('ndjson', cuts) === ndjson), { numRuns: 30 })

  await t.rejects(buffer(Readable.from([bytes.subarray(0, bytes.length - 2)]).pipe(new ExportLines('csv'))), /ended before the COPY did/, 'a COPY cut short is an error, not a short file')
  const wrong = await copyOut(database.url, 'copy (select sensor_id, recorded_at, value from export_rows) to stdout with (format binary)')
  await t.rejects(buffer(wrong.stream.pipe(new ExportLines('csv'))), /not \(timestamptz, int4, float8\[, int4\]\)/)
  wrong.stream.destroy()
  await wrong.closed

  // Across devices: rows of four fields, the device last, by time then device.
  const device = '(sensor_id % 977 + 1)'
  const byTime = await sql<{ ms: string, device_id: number, sensor_id: number, value: number | null }[]>`
    select (extract(epoch from recorded_at) * 1000)::int8::text as ms, ${sql.unsafe(device)} as device_id, sensor_id, value from export_rows order by recorded_at, 2, sensor_id`
  const devicesCsv = ['recorded_at,device_id,sensor_id,value', ...byTime.map((r) => `${expectedTime(Number(r.ms))},${r.device_id},${r.sensor_id},${r.value === null ? '' : String(r.value)}`)].join('\n') + '\n'
  const devicesNdjson = byTime.map((r) => JSON.stringify({ recorded_at: expectedTime(Number(r.ms)), device_id: r.device_id, sensor_id: r.sensor_id, value: r.value })).join('\n') + '\n'
  const four = await copyOut(database.url, `copy (select recorded_at, sensor_id, value, ${device} from export_rows order by recorded_at, 4, sensor_id) to stdout with (format binary)`)
  const fourBytes = await buffer(four.stream)
  await four.closed
  const runDevices = async (format: 'csv' | 'ndjson', cuts: number[]): Promise<string> => (await feedInPieces(fourBytes, cuts, new ExportLines(format, true))).toString('latin1')
  t.equal(await runDevices('csv', []), devicesCsv, 'across devices, CSV: the device after the time')
  t.equal(await runDevices('ndjson', everyOffset), devicesNdjson, 'across devices, NDJSON, fed a byte at a time first')
  await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: fourBytes.length - 1 }), { maxLength: 40 }), async (cuts) => await runDevices('csv', cuts) === devicesCsv), { numRuns: 30 })
})
