import { buffer } from 'node:stream/consumers'
import t from 'tap'
import fc from 'fast-check'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { copyOut } from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { ExportParquet } from '../../src/exports/export-parquet.js'
import { WideCsvLines, wideColumnLabel } from '../../src/exports/export-wide.js'
import { formatReadingTime } from '../../src/time.js'
import { anyInstant, anyValue, feedInPieces } from './copy-chunks.js'

/**
 * The Parquet and wide CSV transforms on PostgreSQL's own binary COPY of random rows, fed whole
 * and cut at random places: what they write must not depend on where the socket's chunks end.
 */

interface Row { ms: number, sensor: number, value: number | null }

const toArrayBuffer = (bytes: Buffer): ArrayBuffer => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer

t.test('Parquet and wide CSV from the binary COPY', async (t) => {
  const database = await createTestDatabase(t)
  const sql = database.sql
  await sql`create table export_rows (recorded_at timestamptz not null, sensor_id int not null, value float8)`
  const copy = async (text: string): Promise<Buffer> => {
    const out = await copyOut(database.url, `copy (${text}) to stdout with (format binary)`)
    const bytes = await buffer(out.stream)
    await out.closed
    return bytes
  }
  const stored = async (where: string, order: string): Promise<Row[]> => (await sql.unsafe<{ ms: string, sensor_id: number, value: number | null }[]>(
    `select (extract(epoch from recorded_at) * 1000)::int8::text as ms, sensor_id, value from export_rows where ${where} order by ${order}`))
    .map((r) => ({ ms: Number(r.ms), sensor: r.sensor_id, value: r.value }))

  t.test('Parquet: every row read back by hyparquet, whatever the cuts', async (t) => {
    // One reading per sensor and time, as the readings' key allows: two would tie in the COPY's order.
    const sample = fc.sample(fc.record({ at: anyInstant, sensor: fc.integer({ min: 1, max: 2_000_000_000 }), value: anyValue }), { numRuns: 3000, seed: 11 })
    const rows = [...new Map(sample.map((r) => [`${r.at}/${r.sensor}`, r])).values()]
    await sql`insert into export_rows select * from unnest(${rows.map((r) => new Date(r.at).toISOString())}::text[]::timestamptz[], ${rows.map((r) => r.sensor)}::int[], ${rows.map((r) => r.value)}::float8[])`
    // Years beyond 9999 and before 1, which Parquet's int64 milliseconds hold.
    await sql`insert into export_rows select to_timestamp(ms / 1000.0), 5, -0.5 from unnest(${[Date.UTC(9999, 11, 31, 23, 59), Date.UTC(10000, 0, 1, 0, 0, 0, 500), Date.UTC(-1, 0, 1)]}::float8[]) as ms`
    // One sensor with 40,000 distinct values, some null: too many for a dictionary, so plain values.
    await sql`insert into export_rows select timestamptz '2026-01-01' + g * interval '1 second', 2147000000, case when g % 1000 = 7 then null else g * 1.000001 - 20000 end from generate_series(1, 40000) g`

    const check = async (where: string, label: string): Promise<Buffer> => {
      const bytes = await copy(`select recorded_at, sensor_id, value from export_rows where ${where} order by sensor_id, recorded_at`)
      const file = await feedInPieces(bytes, [], new ExportParquet())
      const expected = await stored(where, 'sensor_id, recorded_at')
      const read = await parquetReadObjects({ file: toArrayBuffer(file) }) as { recorded_at: Date, sensor_id: number, value: number | null }[]
      t.equal(read.length, expected.length, `${label}: every row`)
      t.equal(expected.filter((e, i) => read[i]?.recorded_at.getTime() !== e.ms || read[i]?.sensor_id !== e.sensor || read[i]?.value !== e.value).length, 0, `${label}: every time, sensor and value`)
      t.ok(expected.some((e) => e.value === null), `${label}: null values among them`)
      return file
    }
    const dictionary = await check('sensor_id < 2147000000', 'values in a dictionary')
    const plain = await check('true', 'plain values')
    const encodings = (file: Buffer): string[] => parquetMetadata(toArrayBuffer(file)).row_groups[0]?.columns[2]?.meta_data?.encodings ?? []
    t.same(encodings(dictionary), ['PLAIN', 'RLE_DICTIONARY'])
    t.same(encodings(plain), ['PLAIN'])
    const statistics = parquetMetadata(toArrayBuffer(plain)).row_groups[0]?.columns.map((c) => c.meta_data?.statistics)
    const [bounds] = await sql<{ sensors: number[], values: number[], nulls: string }[]>`
      select array[min(sensor_id), max(sensor_id)] as sensors, array[min(value), max(value)] as values, count(*) filter (where value is null) as nulls from export_rows`
    t.match(statistics, [
      { min_value: new Date(Date.UTC(-1, 0, 1)), max_value: new Date(Date.UTC(10000, 0, 1, 0, 0, 0, 500)), null_count: 0n },
      { min_value: bounds?.sensors[0], max_value: bounds?.sensors[1], null_count: 0n },
      { min_value: bounds?.values[0], max_value: bounds?.values[1], null_count: BigInt(bounds?.nulls ?? -1) }
    ], 'each column chunk\'s bounds and null count')

    const bytes = await copy('select recorded_at, sensor_id, value from export_rows order by sensor_id, recorded_at')
    t.same(await feedInPieces(bytes, Array.from({ length: 120 }, (_, i) => i + 1), new ExportParquet()), plain, 'the header and the first rows fed one byte at a time')
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 30 }), async (cuts) =>
      (await feedInPieces(bytes, cuts, new ExportParquet())).equals(plain)), { numRuns: 10 })
    await t.rejects(feedInPieces(bytes.subarray(0, bytes.length - 2), [], new ExportParquet()), /ended before the COPY did/, 'a COPY cut short is an error, not a short file')
  })

  t.test('wide CSV: a line a time, every cell where it belongs, whatever the cuts', async (t) => {
    await sql`truncate export_rows`
    const sensors = [4, 9, 55, 56, 1_000_000]
    const rows = fc.sample(fc.record({ at: fc.integer({ min: 0, max: 400 }).map((m) => Date.UTC(2026, 10, 1) + m * 60_000 + (m % 7 === 0 ? 250 : 0)), sensor: fc.constantFrom(...sensors), value: anyValue }), { numRuns: 1500, seed: 5 })
    const unique = [...new Map(rows.map((r) => [`${r.at}/${r.sensor}`, r])).values()]
    await sql`insert into export_rows select * from unnest(${unique.map((r) => new Date(r.at).toISOString())}::text[]::timestamptz[], ${unique.map((r) => r.sensor)}::int[], ${unique.map((r) => r.value)}::float8[])`
    const columns = sensors.map((id) => ({ id, name: `sensor ${id}`, unit: id === 4 ? null : 'ºC', measurement: id === 55 ? 'Air, "outside"' : null }))
    const expected = new Map<number, (number | null)[]>()
    for (const r of await stored('true', 'recorded_at')) {
      const line = expected.get(r.ms) ?? sensors.map(() => null)
      line[sensors.indexOf(r.sensor)] = r.value
      expected.set(r.ms, line)
    }
    const text = ['recorded_at,sensor 4 [4],sensor 9 (ºC) [9],"Air, ""outside"" (ºC) [55]",sensor 56 (ºC) [56],sensor 1000000 (ºC) [1000000]',
      ...[...expected].sort((a, b) => a[0] - b[0]).map(([ms, cells]) => [formatReadingTime(ms), ...cells.map((v) => v === null ? '' : String(v))].join(','))].join('\n') + '\n'
    // Rows of one time in any sensor order, as the merge by time hands them over.
    const bytes = await copy('select recorded_at, sensor_id, value from export_rows order by recorded_at, sensor_id desc')
    t.equal((await feedInPieces(bytes, [], new WideCsvLines(columns))).toString('utf8'), text, 'header quoted where it must be, times in order, empty cells')
    await fc.assert(fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 30 }), async (cuts) =>
      (await feedInPieces(bytes, cuts, new WideCsvLines(columns))).toString('utf8') === text), { numRuns: 20 })

    // Lines longer than an output buffer: 3000 columns (sensor 1000000 has none, and is left out).
    const many = Array.from({ length: 3000 }, (_, i) => ({ id: i + 1, name: 's', unit: null, measurement: null }))
    const manyText = [['recorded_at', ...many.map(wideColumnLabel)].join(','), ...[...expected].sort((a, b) => a[0] - b[0]).map(([ms, cells]) => {
      const line: string[] = many.map(() => '')
      sensors.forEach((id, i) => { if (id <= many.length) line[id - 1] = cells[i] === null || cells[i] === undefined ? '' : String(cells[i]) })
      return [formatReadingTime(ms), ...line].join(',')
    })].join('\n') + '\n'
    t.equal((await feedInPieces(bytes, [], new WideCsvLines(many))).toString('utf8'), manyText, 'lines longer than an output buffer')
  })
})
