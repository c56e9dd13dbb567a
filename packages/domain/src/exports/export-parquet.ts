import { ByteWriter, type SchemaElement } from 'hyparquet-writer'
import { writePageHeader } from 'hyparquet-writer/src/datapage.js'
import { deltaBinaryPack } from 'hyparquet-writer/src/delta.js'
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js'
import { writeMetadata } from 'hyparquet-writer/src/metadata.js'
import { CopyRows, type RowBatch } from '@esp/db'

type FileMetaData = Parameters<typeof writeMetadata>[1]
type RowGroup = FileMetaData['row_groups'][number]
type ColumnChunk = RowGroup['columns'][number]
type Statistics = NonNullable<NonNullable<ColumnChunk['meta_data']>['statistics']>
type PageHeader = Parameters<typeof writePageHeader>[1]
type DataPageHeaderV2 = NonNullable<PageHeader['data_page_header_v2']>

/**
 * Rows a row group holds. A group is encoded and sent as soon as it fills, so the process holds
 * one group's columns and its encoded bytes (a few MB) whatever the range; readers also skip row
 * groups by their statistics (time, sensor).
 */
export const PARQUET_ROW_GROUP = 131_072
/** distinct values a group's value dictionary may hold (15-bit indices); more, and the group's values are plain */
const MAX_DICTIONARY = 32_768
/** `PAR1`, which opens and closes the file */
const MAGIC = 0x31524150

/**
 * The long CSV's columns with their Parquet types: the time as TIMESTAMP(MILLIS, UTC) (the
 * converted type too, for older readers), the device id (across devices) and the sensor id as
 * INT32, the value as a DOUBLE that may be null, as in the readings table.
 */
const TIME_COLUMN: SchemaElement = { name: 'recorded_at', type: 'INT64', repetition_type: 'REQUIRED', converted_type: 'TIMESTAMP_MILLIS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' } }
const DEVICE_COLUMN: SchemaElement = { name: 'device_id', type: 'INT32', repetition_type: 'REQUIRED' }
const SENSOR_COLUMN: SchemaElement = { name: 'sensor_id', type: 'INT32', repetition_type: 'REQUIRED' }
const VALUE_COLUMN: SchemaElement = { name: 'value', type: 'DOUBLE', repetition_type: 'OPTIONAL' }
const schemaOf = (columns: SchemaElement[]): SchemaElement[] => [{ name: 'schema', num_children: columns.length }, ...columns]
const ascending = (columnIdx: number): { column_idx: number, descending: boolean, nulls_first: boolean } => ({ column_idx: columnIdx, descending: false, nulls_first: false })
/** One device's rows come by sensor, then time (exportCopySql); rows across devices by time, device, sensor. */
const LAYOUTS = {
  device: { schema: schemaOf([TIME_COLUMN, SENSOR_COLUMN, VALUE_COLUMN]), sorting: [ascending(1), ascending(0)] },
  devices: { schema: schemaOf([TIME_COLUMN, DEVICE_COLUMN, SENSOR_COLUMN, VALUE_COLUMN]), sorting: [ascending(0), ascending(1), ascending(2)] }
}

/** hyparquet-writer's growing buffer, emptied as its bytes are sent; `offset` keeps counting from the file's start. */
class Bytes extends ByteWriter {
  /** what the buffer holds, copied (the buffer is written again), and the buffer emptied */
  take (): Buffer {
    const bytes = Buffer.from(this.buffer.slice(0, this.index))
    this.index = 0
    return bytes
  }

  /** emptied as a scratch writer of one page, whose offsets do not matter */
  reset (): this {
    this.index = this.offset = 0
    return this
  }

  bytes (): Uint8Array {
    return new Uint8Array(this.buffer, 0, this.index)
  }
}

/**
 * Turns the export's binary COPY into an Apache Parquet file, a row group at a time, each sent as
 * soon as it is full: rows by sensor then time as in the long CSV, uncompressed pages (v2) whose
 * encodings already keep the file small: times DELTA_BINARY_PACKED (a sensor's readings come at a
 * steady step), sensor ids a dictionary (a few runs a group), values a dictionary while a group
 * holds at most MAX_DICTIONARY distinct values (sensors report in steps), plain otherwise. Each
 * column chunk has min, max and null count. An export with no rows is a valid file with the
 * schema and no row groups.
 *
 * The pages and the footer are hyparquet-writer's (page headers, RLE/bit-packing, delta packing,
 * the footer's thrift); the columns are laid out here from typed arrays. Its ParquetWriter does
 * the same for any column of any type, and that generality (a BigInt and several checks per
 * value, statistics compared value by value, the encode of a group blocking the COPY's socket)
 * made the export half as fast as the CSV one (docs/benchmarks.md, case 5).
 */
export class ExportParquet extends CopyRows {
  private readonly file = new Bytes(1 << 20)
  /** scratch writers of a column's pages */
  private readonly levels = new Bytes(1 << 16)
  private readonly dictionary = new Bytes(1 << 16)
  private readonly page = new Bytes(1 << 20)
  private readonly times = new Float64Array(PARQUET_ROW_GROUP)
  /** the times as int64, written as two 32-bit halves: no BigInt a row */
  private readonly times64 = new BigInt64Array(PARQUET_ROW_GROUP)
  private readonly times32 = new Int32Array(this.times64.buffer)
  private readonly sensors = new Int32Array(PARQUET_ROW_GROUP)
  private readonly devices: Int32Array
  private readonly layout: typeof LAYOUTS.device
  private readonly values = new Float64Array(PARQUET_ROW_GROUP)
  private readonly nulls = new Uint8Array(PARQUET_ROW_GROUP)
  /** definition levels: 1 where there is a value */
  private readonly defined = new Uint8Array(PARQUET_ROW_GROUP)
  private readonly indexes = new Int32Array(PARQUET_ROW_GROUP)
  private readonly rowGroups: RowGroup[] = []
  private rowCount = 0
  private nullCount = 0
  private fileRows = 0

  /** `withDevice`: rows across devices, with a device_id column */
  constructor (private readonly withDevice = false) {
    super()
    this.devices = new Int32Array(withDevice ? PARQUET_ROW_GROUP : 0)
    this.layout = withDevice ? LAYOUTS.devices : LAYOUTS.device
    this.file.appendUint32(MAGIC)
  }

  protected override rows (batch: RowBatch): void {
    let from = 0
    while (from < batch.length) {
      const to = from + Math.min(PARQUET_ROW_GROUP - this.rowCount, batch.length - from)
      this.times.set(batch.times.subarray(from, to), this.rowCount)
      this.sensors.set(batch.sensors.subarray(from, to), this.rowCount)
      if (this.withDevice) this.devices.set(batch.devices.subarray(from, to), this.rowCount)
      this.values.set(batch.values.subarray(from, to), this.rowCount)
      this.nulls.set(batch.nulls.subarray(from, to), this.rowCount)
      if (batch.nullCount > 0) for (let i = from; i < to; i++) this.nullCount += batch.nulls[i] as number
      this.rowCount += to - from
      from = to
      if (this.rowCount === PARQUET_ROW_GROUP) this.writeGroup()
    }
  }

  protected override finish (): void {
    if (this.rowCount > 0) this.writeGroup()
    writeMetadata(this.file, { version: 2, schema: this.layout.schema, num_rows: BigInt(this.fileRows), row_groups: this.rowGroups, created_by: 'sensor-platform export (hyparquet-writer)', metadata_length: 0 })
    this.file.appendUint32(MAGIC)
    this.push(this.file.take())
  }

  private writeGroup (): void {
    const n = this.rowCount
    const start = this.file.offset
    const columns = [this.timeColumn(n), ...(this.withDevice ? [this.idColumn('device_id', this.devices, n)] : []), this.idColumn('sensor_id', this.sensors, n), this.valueColumn(n)]
    let size = 0n
    for (const c of columns) size += c.meta_data?.total_uncompressed_size ?? 0n
    this.rowGroups.push({ columns, num_rows: BigInt(n), total_byte_size: size, total_compressed_size: BigInt(this.file.offset - start), file_offset: BigInt(start), sorting_columns: this.layout.sorting })
    this.fileRows += n
    this.rowCount = 0
    this.nullCount = 0
    this.push(this.file.take())
  }

  private timeColumn (n: number): ColumnChunk {
    const { times, times32 } = this
    let min = Infinity
    let max = -Infinity
    for (let i = 0; i < n; i++) {
      const ms = times[i] as number
      if (ms < min) min = ms
      if (ms > max) max = ms
      // Two's complement halves, little-endian as BigInt64Array lays them out.
      times32[2 * i] = ms % 4_294_967_296
      times32[2 * i + 1] = Math.floor(ms / 4_294_967_296)
    }
    deltaBinaryPack(this.page.reset(), this.times64.subarray(0, n), 'INT64')
    return this.column('recorded_at', 'INT64', n, null, { encoding: 'DELTA_BINARY_PACKED', numNulls: 0 }, { min_value: min, max_value: max, null_count: 0n })
  }

  /** A column of ids (sensors, devices), as a dictionary: a group holds few of them. */
  private idColumn (name: string, ids: Int32Array, n: number): ColumnChunk {
    const { indexes } = this
    const dictionary: number[] = []
    const indexOf = new Map<number, number>()
    let id = Number.NaN
    let index = -1
    let min = Infinity
    let max = -Infinity
    for (let i = 0; i < n; i++) {
      // One device's rows come by sensor: one lookup a run.
      if (ids[i] !== id) {
        id = ids[i] as number
        index = indexOf.get(id) ?? -1
        if (index === -1) {
          index = dictionary.push(id) - 1
          indexOf.set(id, index)
          if (id < min) min = id
          if (id > max) max = id
        }
      }
      indexes[i] = index
    }
    const plain = this.dictionary.reset()
    for (const entry of dictionary) plain.appendInt32(entry)
    this.dictionaryIndexes(n, dictionary.length)
    return this.column(name, 'INT32', n, { bytes: plain.bytes(), count: dictionary.length }, { encoding: 'RLE_DICTIONARY', numNulls: 0 },
      { min_value: min, max_value: max, null_count: 0n })
  }

  private valueColumn (n: number): ColumnChunk {
    const { values, nulls, defined, indexes } = this
    for (let i = 0; i < n; i++) defined[i] = (nulls[i] as number) ^ 1
    const levels = this.levels.reset()
    writeRleBitPackedHybrid(levels, defined.subarray(0, n), 1)
    let min = Infinity
    let max = -Infinity
    const dictionary: number[] = []
    const indexOf = new Map<number, number>()
    let count = 0
    for (let i = 0; i < n; i++) {
      if (nulls[i] === 1) continue
      const value = values[i] as number
      if (value < min) min = value
      if (value > max) max = value
      if (dictionary.length > MAX_DICTIONARY) continue
      let index = indexOf.get(value)
      if (index === undefined) {
        // A Map holds -0 and 0 as one key: the entry is +0, as the text formats print both.
        index = dictionary.push(value + 0) - 1
        indexOf.set(value, index)
      }
      indexes[count++] = index
    }
    // NaN is left out of the bounds, and a zero bound is -0 as a min and +0 as a max (Parquet's
    // order of floats); no bounds when every value is NaN or null.
    const nullCount = BigInt(this.nullCount)
    const statistics: Statistics = min > max ? { null_count: nullCount } : { min_value: min === 0 ? -0 : min, max_value: max === 0 ? 0 : max, null_count: nullCount }
    const page = { numNulls: this.nullCount, levels: levels.bytes() }
    if (dictionary.length > 0 && dictionary.length <= MAX_DICTIONARY) {
      const plain = this.dictionary.reset()
      for (const value of dictionary) plain.appendFloat64(value)
      this.dictionaryIndexes(count, dictionary.length)
      return this.column('value', 'DOUBLE', n, { bytes: plain.bytes(), count: dictionary.length }, { ...page, encoding: 'RLE_DICTIONARY' }, statistics)
    }
    const plain = this.page.reset()
    if (this.nullCount === 0) {
      // A Float64Array is laid out little-endian here, as PLAIN doubles are.
      plain.appendBytes(new Uint8Array(values.buffer, 0, n * 8))
    } else {
      for (let i = 0; i < n; i++) if (nulls[i] === 0) plain.appendFloat64(values[i] as number)
    }
    return this.column('value', 'DOUBLE', n, null, { ...page, encoding: 'PLAIN' }, statistics)
  }

  /** The first `count` of `indexes` into the page: their bit width, then RLE runs and bit-packed groups. */
  private dictionaryIndexes (count: number, size: number): void {
    const width = size <= 1 ? 0 : Math.ceil(Math.log2(size))
    const page = this.page.reset()
    page.appendUint8(width)
    writeRleBitPackedHybrid(page, this.indexes.subarray(0, count), width)
  }

  /**
   * Writes a column chunk into the file: the dictionary page when there is one, then one data
   * page (v2) of the definition levels and what `page` holds; returns its metadata.
   */
  private column (name: string, type: 'INT64' | 'INT32' | 'DOUBLE', n: number, dictionary: { bytes: Uint8Array, count: number } | null,
    data: { encoding: DataPageHeaderV2['encoding'], numNulls: number, levels?: Uint8Array }, statistics: Statistics): ColumnChunk {
    const file = this.file
    const start = file.offset
    if (dictionary !== null) {
      writePageHeader(file, {
        type: 'DICTIONARY_PAGE',
        uncompressed_page_size: dictionary.bytes.length,
        compressed_page_size: dictionary.bytes.length,
        dictionary_page_header: { num_values: dictionary.count, encoding: 'PLAIN' }
      })
      file.appendBytes(dictionary.bytes)
    }
    const dataStart = file.offset
    const levels = data.levels ?? new Uint8Array(0)
    const body = this.page.bytes()
    writePageHeader(file, {
      type: 'DATA_PAGE_V2',
      uncompressed_page_size: levels.length + body.length,
      compressed_page_size: levels.length + body.length,
      data_page_header_v2: {
        num_values: n,
        num_nulls: data.numNulls,
        num_rows: n,
        encoding: data.encoding,
        definition_levels_byte_length: levels.length,
        repetition_levels_byte_length: 0,
        is_compressed: false
      }
    })
    file.appendBytes(levels)
    file.appendBytes(body)
    const size = BigInt(file.offset - start)
    return {
      file_offset: BigInt(start),
      meta_data: {
        type,
        encodings: dictionary === null ? [data.encoding] : ['PLAIN', data.encoding],
        path_in_schema: [name],
        codec: 'UNCOMPRESSED',
        num_values: BigInt(n),
        total_uncompressed_size: size,
        total_compressed_size: size,
        data_page_offset: BigInt(dataStart),
        ...(dictionary === null ? {} : { dictionary_page_offset: BigInt(start) }),
        statistics
      }
    }
  }
}
