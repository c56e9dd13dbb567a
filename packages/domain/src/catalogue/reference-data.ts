import { type CatalogueRows, type ChangeSubscriber, type Handle, type KitRow, loadCatalogue, type MeasurementRow, poolOf, type SensorRow, type TagRow, type TagSensorRow } from '@esp/db'
import { generations } from '../generations.js'
import { formatTimestamp } from '../time.js'

/*
 * The reference data (measurements, sensors, kits and their sensors, tags, tag sensors) in the
 * process, with the representations made from it (issue 20): almost every read shows some of it,
 * and it changes a few times a year.
 *
 * Guarantee: a reader never sees it older than a write that returned to anyone. A trigger on each
 * table bumps `catalogue_generation` in the writing transaction (migration 0006), so the row is
 * visible to every snapshot taken after that write returned. A reader learns the generation from
 * a query sent after its request arrived, either its own statement (a device's read statement
 * carries it, at no extra round trip) or the shared barrier read (`fresh`), and uses the data only
 * if it was loaded under that generation or a later one; otherwise it loads it again, once for all
 * the requests waiting. The trigger's NOTIFY (topic `catalogue`) only makes every replica reload
 * ahead of its next request.
 */

export const CATALOGUE_TOPIC = 'catalogue'

/** Contract: Measurement. */
export const presentMeasurement = (m: MeasurementRow) => ({
  id: m.id,
  uuid: m.uuid,
  name: m.name,
  description: m.description,
  definition: m.definition,
  created_at: formatTimestamp(m.createdAt),
  updated_at: formatTimestamp(m.updatedAt)
})

type MeasurementSummary = Pick<MeasurementRow, 'id' | 'uuid' | 'name' | 'description' | 'definition'>

/** Contract: Sensor, with the embedded measurement (behaviour.md §13 key order); a device's sensors add their readings to it. */
export function presentSensor (s: Omit<SensorRow, 'equation' | 'reverseEquation'>, m: MeasurementSummary | null | undefined, tags: string[]) {
  return {
    id: s.id,
    uuid: s.uuid,
    parent_id: s.parentId,
    ancestry: s.parentId === null ? null : String(s.parentId),
    name: s.name,
    description: s.description,
    unit: s.unit,
    tags,
    datasheet: s.datasheet,
    unit_definition: s.unitDefinition,
    measurement_id: s.measurementId,
    default_key: s.defaultKey,
    created_at: formatTimestamp(s.createdAt),
    updated_at: formatTimestamp(s.updatedAt),
    measurement: m === undefined || m === null ? null : { id: m.id, uuid: m.uuid, name: m.name, description: m.description, definition: m.definition }
  }
}

export type SensorView = ReturnType<typeof presentSensor>

export const presentTag = (t: TagRow) => ({
  id: t.id, uuid: t.uuid, name: t.name, description: t.description, created_at: formatTimestamp(t.createdAt), updated_at: formatTimestamp(t.updatedAt)
})

export const presentTagSensor = (t: TagSensorRow) => ({
  id: t.id, name: t.name, description: t.description, created_at: formatTimestamp(t.createdAt), updated_at: formatTimestamp(t.updatedAt)
})

const byId = <T extends { id: number }>(rows: T[]): Map<number, T> => new Map(rows.map((row) => [row.id, row]))

function grouped<T, K> (rows: T[], key: (row: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>()
  for (const row of rows) {
    const group = groups.get(key(row))
    if (group === undefined) groups.set(key(row), [row])
    else group.push(row)
  }
  return groups
}

/** A representation as JSON text, made once per generation: a single-record read sends it as it is. */
export interface JsonText { readonly json: string }

/** What `make` gives for `id`, made the first time it is asked for and kept in `made`. */
function once<V> (made: Map<number, V>, id: number, make: () => V | undefined): V | undefined {
  let value = made.get(id)
  if (value === undefined) {
    value = make()
    if (value !== undefined) made.set(id, value)
  }
  return value
}

const presented = <R, V> (row: R | undefined, present: (row: R) => V): V | undefined => row === undefined ? undefined : present(row)
const asText = (view: unknown): JsonText | undefined => view === undefined ? undefined : { json: JSON.stringify(view) }

/** The reference data of one generation, and its representations, each made once. */
export class Catalogue {
  readonly generation: number
  readonly measurements: ReadonlyMap<number, MeasurementRow>
  /** in name, then id order */
  readonly sensors: ReadonlyMap<number, SensorRow>
  readonly kits: ReadonlyMap<number, KitRow>
  readonly tags: ReadonlyMap<number, TagRow>
  readonly tagSensors: ReadonlyMap<number, TagSensorRow>
  private readonly sensorRank: Map<number, number>
  private readonly kitLinks: Map<number, CatalogueRows['kitSensors']>
  private readonly sensorTagNames: Map<number, string[]>
  private readonly tagsByName: Map<string, TagRow>
  private readonly sensorViews = new Map<number, SensorView>()
  private readonly kitViews = new Map<number, KitView>()
  private readonly sensorTexts = new Map<number, JsonText>()
  private readonly kitTexts = new Map<number, JsonText>()
  private readonly measurementTexts = new Map<number, JsonText>()
  private readonly tagTexts = new Map<number, JsonText>()
  private readonly tagSensorTexts = new Map<number, JsonText>()

  constructor (rows: CatalogueRows) {
    this.generation = rows.generation
    this.measurements = byId(rows.measurements)
    this.sensors = byId(rows.sensors)
    this.sensorRank = new Map(rows.sensors.map((s, i) => [s.id, i]))
    this.kits = byId(rows.kits)
    this.kitLinks = grouped(rows.kitSensors, (link) => link.kitId)
    this.tags = byId(rows.tags)
    // The first of a name wins, as `limit 1` over the unique lower-case name did.
    this.tagsByName = new Map()
    for (const tag of rows.tags) if (!this.tagsByName.has(tag.name)) this.tagsByName.set(tag.name, tag)
    this.tagSensors = byId(rows.tagSensors)
    this.sensorTagNames = new Map([...grouped(rows.sensorTags, (t) => t.sensorId)].map(([id, tags]) => [id, tags.map((t) => t.name)]))
  }

  tagByName (name: string): TagRow | undefined {
    return this.tagsByName.get(name)
  }

  /** The sensor's tag names, by name. */
  tagNamesOf (sensorId: number): string[] {
    return this.sensorTagNames.get(sensorId) ?? []
  }

  measurementOf (sensor: Pick<SensorRow, 'measurementId'>): MeasurementRow | null {
    return sensor.measurementId === null ? null : this.measurements.get(sensor.measurementId) ?? null
  }

  /** Where a sensor sorts among a device's sensors (by name, then id, as PostgreSQL orders them). */
  rankOf (sensorId: number): number {
    return this.sensorRank.get(sensorId) ?? Number.MAX_SAFE_INTEGER
  }

  /** The sensor's representation, made once per generation; shared, so callers copy before changing it. */
  sensorView (id: number): SensorView | undefined {
    return once(this.sensorViews, id, () => {
      const sensor = this.sensors.get(id)
      return sensor === undefined ? undefined : presentSensor(sensor, this.measurementOf(sensor), this.tagNamesOf(id))
    })
  }

  // A record's representation as JSON text, made once per generation: the routes of single
  // records send it without serializing it again (a kit with its sensors is 5 KB).

  sensorText (id: number): JsonText | undefined {
    return once(this.sensorTexts, id, () => asText(this.sensorView(id)))
  }

  kitText (id: number): JsonText | undefined {
    return once(this.kitTexts, id, () => asText(this.kitView(id)))
  }

  measurementText (id: number): JsonText | undefined {
    return once(this.measurementTexts, id, () => asText(presented(this.measurements.get(id), presentMeasurement)))
  }

  tagText (id: number): JsonText | undefined {
    return once(this.tagTexts, id, () => asText(presented(this.tags.get(id), presentTag)))
  }

  tagSensorText (id: number): JsonText | undefined {
    return once(this.tagSensorTexts, id, () => asText(presented(this.tagSensors.get(id), presentTagSensor)))
  }

  /** The representation of a sensor row read on its own (a list page or a write), with this generation's measurement and tags. */
  presentSensorRow (sensor: SensorRow): SensorView {
    return presentSensor(sensor, this.measurementOf(sensor), this.tagNamesOf(sensor.id))
  }

  /** The older form's kit with its sensors (and their keys) in blueprint order. */
  kitView (id: number): KitView | undefined {
    return once(this.kitViews, id, () => presented(this.kits.get(id), (kit) => this.presentKitRow(kit)))
  }

  presentKitRow (k: KitRow) {
    return {
      id: k.id,
      uuid: k.uuid,
      slug: k.slug,
      name: k.name,
      description: k.description,
      created_at: formatTimestamp(k.createdAt),
      updated_at: formatTimestamp(k.updatedAt),
      sensors: (this.kitLinks.get(k.id) ?? []).flatMap((link) => {
        const sensor = this.sensors.get(link.sensorId)
        // A fresh representation with the key as its last field: a spread of the shared one
        // would make a slow object that every answer then serializes.
        return sensor === undefined ? [] : [Object.assign(this.presentSensorRow(sensor), { key: link.key })]
      })
    }
  }
}

export type KitView = ReturnType<Catalogue['presentKitRow']>

/** The reference data of one database, kept in the process (see the top of this file). */
export class ReferenceData {
  private latest: { number: number, catalogue: Catalogue } | undefined
  /** the load under way, and its number: loads are numbered in the order they start */
  private loading: { number: number, promise: Promise<Catalogue> } | undefined
  private started = 0
  /** a change was announced while a load that may predate it ran: load again after it */
  private stale = false
  /** how many times the data was loaded (for tests and metrics) */
  loads = 0

  constructor (private readonly handle: Handle) {}

  /**
   * The data as of a generation read by a query sent after `notBefore` (performance.now(); the
   * request's arrival): never older than a write that returned before it. A signed-in request's
   * credential check already read one, and it serves here too.
   */
  async fresh (notBefore = performance.now()): Promise<Catalogue> {
    return await this.atLeast((await generations(this.handle).current(notBefore)).catalogue)
  }

  /**
   * The data of `generation`: what is kept when it has that generation, else a load. The caller
   * read `generation` from a snapshot taken before this call, so any load that starts after this
   * call reads it or a later one; a load already under way may have started before it committed,
   * so its answer counts only if it has that generation. Equality, not order: a database restored
   * from a backup can go back to a lower generation, and then what is kept is not that data.
   */
  async atLeast (generation: number): Promise<Catalogue> {
    const latest = this.latest?.catalogue
    if (latest !== undefined && latest.generation === generation) return latest
    const before = this.started
    const pending = this.loading
    if (pending !== undefined) {
      const loaded = await pending.promise
      if (loaded.generation === generation) return loaded
    }
    const next = this.loading
    return next !== undefined && next.number > before ? await next.promise : await this.load()
  }

  /**
   * The change feed's subscriber: a write elsewhere reloads ahead of the next request (again after
   * a load under way, which may predate it); after a reconnect, whose missed notices are lost, it
   * reloads too. Requests never depend on it: they check the generation.
   */
  subscriber (onError: (err: unknown) => void): ChangeSubscriber {
    const reload = (): void => {
      if (this.loading === undefined) this.load().catch(onError)
      else this.stale = true
    }
    return { change: reload, reset: reload }
  }

  private async load (): Promise<Catalogue> {
    const number = ++this.started
    this.stale = false
    const promise = loadCatalogue(this.handle).then((rows) => {
      this.loads++
      const catalogue = new Catalogue(rows)
      // The load that started last holds what the database has now.
      if (this.latest === undefined || number > this.latest.number) this.latest = { number, catalogue }
      return catalogue
    }).finally(() => {
      if (this.loading?.number !== number) return
      this.loading = undefined
      if (this.stale) this.load().catch(() => { this.stale = true })
    })
    this.loading = { number, promise }
    return await promise
  }
}

const kept = new WeakMap<object, ReferenceData>()

/** One ReferenceData per database pool: any handle of the pool finds it. */
export function referenceData (h: Handle): ReferenceData {
  const pool = poolOf(h)
  let data = kept.get(pool)
  if (data === undefined) kept.set(pool, data = new ReferenceData(h))
  return data
}
