import type { Handle } from '../client.js'

/** A sensor one of several devices may name: by id, by its kit's key or by its default key (domain resolveSensors). */
export interface DeviceSensorRow { device_id: number, id: number, default_key: string | null, kit_key: string | null, equation: string | null }

/**
 * The sensors of several devices that `ids` or `keys` may name, with each device's component
 * equation: a sensor whose id is among `ids`, or whose kit key (of that device's kit) or default
 * key is among `keys`. One round trip for the refs of every device of a batch of messages.
 */
export async function findDeviceSensors (h: Handle, devices: ReadonlyArray<{ id: number, kitId: number | null }>, ids: readonly number[], keys: readonly string[]): Promise<DeviceSensorRow[]> {
  return await h.sql<DeviceSensorRow[]>`
    select d.id as device_id, s.id, s.default_key, ks.key as kit_key, c.equation
    from unnest(${devices.map((d) => d.id)}::int[], ${devices.map((d) => d.kitId)}::int[]) as d(id, kit_id)
    join sensors s on true
    left join kit_sensors ks on ks.sensor_id = s.id and ks.kit_id = d.kit_id
    left join components c on c.sensor_id = s.id and c.device_id = d.id
    where s.id = any(${ids as number[]}::int[]) or ks.key = any(${keys as string[]}::text[]) or s.default_key = any(${keys as string[]}::text[])
    order by d.id, s.id`
}

/** What an import's `skipped` holds (domain SkippedView). */
export interface ImportSkipped { count: number, unknown_sensors: Array<number | string>, items: Array<{ path: string, sensor: number | string }> }

/** A row of reading_imports as the import's answer reads it. */
export interface ReadingImportRow {
  id: number
  device_id: number
  state: string
  rows_total: number
  rows_done: number
  values_total: number
  stored: number
  duplicates: number
  skipped: ImportSkipped | null
  error: string | null
  created_at: string | Date
  finished_at: string | Date | null
}

const IMPORT_COLUMNS = 'id, device_id, state, rows_total, rows_done, values_total, stored, duplicates, skipped, error, created_at, finished_at'

export interface NewReadingImport { deviceId: number, userId: number, rowsTotal: number, valuesTotal: number, skipped: ImportSkipped, csv: string }

/** A queued import and its file (the caller sends its job in the same transaction). */
export async function insertReadingImport (h: Handle, data: NewReadingImport): Promise<ReadingImportRow> {
  // JSON as text cast to jsonb: drizzle owns the shared client's serializers.
  const [row] = await h.sql.unsafe<ReadingImportRow[]>(`
      insert into reading_imports (device_id, user_id, rows_total, values_total, skipped, csv) values ($1, $2, $3, $4, $5::jsonb, $6)
      returning ${IMPORT_COLUMNS}`, [data.deviceId, data.userId, data.rowsTotal, data.valuesTotal, JSON.stringify(data.skipped), data.csv])
  if (row === undefined) throw new Error('no import row')
  return row
}

/** An import of this device, or undefined. */
export async function findReadingImport (h: Handle, importId: number, deviceId: number): Promise<ReadingImportRow | undefined> {
  const [row] = await h.sql.unsafe<ReadingImportRow[]>(`select ${IMPORT_COLUMNS} from reading_imports where id = $1 and device_id = $2`, [importId, deviceId])
  return row
}

/**
 * Marks an import running from its start (a retry starts over) and returns its device and file;
 * undefined when it is done (or gone).
 */
export async function startReadingImport (h: Handle, importId: number): Promise<{ device_id: number, csv: string | null } | undefined> {
  const [job] = await h.sql<{ device_id: number, csv: string | null }[]>`
    update reading_imports set state = 'running', rows_done = 0, stored = 0, duplicates = 0, error = null, updated_at = now()
    where id = ${importId} and state in ('queued', 'running', 'failed') returning device_id, csv`
  return job
}

/** The progress of an import after one of its steps: rows done so far, the step's counts added. */
export async function recordReadingImportStep (h: Handle, importId: number, rowsDone: number, stored: number, duplicates: number): Promise<void> {
  await h.sql`update reading_imports set rows_done = ${rowsDone}, stored = stored + ${stored}, duplicates = duplicates + ${duplicates}, updated_at = now() where id = ${importId}`
}

/** An import finished: its file is dropped. */
export async function finishReadingImport (h: Handle, importId: number): Promise<void> {
  await h.sql`update reading_imports set state = 'done', csv = null, finished_at = now(), updated_at = now() where id = ${importId}`
}

/** An import failed, with why (at most 500 characters). */
export async function failReadingImport (h: Handle, importId: number, error: string): Promise<void> {
  await h.sql`update reading_imports set state = 'failed', error = ${error.slice(0, 500)}, updated_at = now() where id = ${importId}`
}
