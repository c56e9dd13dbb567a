import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import { type Handle, trimOldest, worldMapFingerprint, worldMapRows } from '@esp/db'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { errors } from '../errors.js'
import { countryName } from '../geo/country.js'
import { formatTimestamp, type Clock } from '../time.js'
import { recordIdOr404 } from '../validation/record-id.js'
import { systemTags } from './device-state.js'
import { canSee } from './device-access.js'
import { hardwareOf } from './device-view.js'

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

export type MapEncoding = 'gzip' | 'br'

/** One rendering of the map with its validator; each compressed form is made once, when first asked for. */
export class MapBody {
  readonly etag: string
  private readonly encoded = new Map<MapEncoding, Promise<Buffer>>()

  constructor (readonly json: string, readonly count: number) {
    this.etag = `"${createHash('sha1').update(json).digest('base64url')}"`
  }

  async encode (encoding: MapEncoding): Promise<Buffer> {
    let body = this.encoded.get(encoding)
    if (body === undefined) {
      body = encoding === 'gzip'
        ? gzipAsync(this.json, { level: 6 })
        // Quality 7 with a text hint: about 5 % smaller than 5 at 10,000 devices, for 150 ms more per rebuild.
        : brotliAsync(this.json, { params: { [constants.BROTLI_PARAM_QUALITY]: 7, [constants.BROTLI_PARAM_LGWIN]: 24, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: this.json.length } })
      this.encoded.set(encoding, body)
    }
    return await body
  }
}

/** Renderings with private devices kept per viewer, at most this many per build. */
const VIEWER_BODIES = 32

/** Compact renderings kept per build beside the public one: viewers' and measurements' variants. */
const COMPACT_BODIES = 64

interface Entry { ownerId: number, isPrivate: boolean, json: string }

/** One device as the compact map has it: `o` online, `f` offline, `n` new (no reading yet); `i` indoor, `o` outdoor. */
interface Point { id: number, ownerId: number, isPrivate: boolean, lat: number, lng: number, condition: 'o' | 'f' | 'n', exposure: 'i' | 'o', name: string }

interface Latest { value: number | null, recorded: number }

interface Built {
  fingerprint: string
  builtAt: number
  /** public devices, rendered and compressed once */
  body: MapBody
  /** private devices, for their owners and admins (fresh_world_map) */
  privateEntries: Entry[]
  /** the fresh maps of viewers with private devices (key: user id, or "admin"), oldest first */
  viewerBodies: Map<string, MapBody>
  /** every device of the map in id order, private ones too: what the compact renderings are made of */
  points: Point[]
  /** by measurement id, by device: the newest value of the device's sensors of it */
  values: Map<number, Map<number, Latest>>
  measurements: Set<number>
  /** the compact map of public devices, rendered and compressed once */
  compact: MapBody
  /** other compact renderings (key: viewer and measurement), made when first asked for, oldest first */
  compactBodies: Map<string, MapBody>
}

/**
 * The compact map (GET /devices/compact_map): columns rather than objects, so that a key is
 * written once and gzip sees runs of like values. Ids ascend and are delta-coded (small
 * numbers); positions are integers of 1e-5 degrees, as stored (a position is truncated to 5
 * digits), not delta-coded: ids do not follow places, and deltas measured no smaller there.
 */
function compactJson (points: readonly Point[], measurement: { id: number, values: ReadonlyMap<number, Latest> } | null): string {
  const id: number[] = []
  const lat: number[] = []
  const lng: number[] = []
  const name: string[] = []
  let condition = ''
  let exposure = ''
  let previous = 0
  for (const p of points) {
    id.push(p.id - previous)
    previous = p.id
    lat.push(p.lat)
    lng.push(p.lng)
    condition += p.condition
    exposure += p.exposure
    name.push(p.name)
  }
  const columns = { count: points.length, id, lat, lng, condition, exposure, name }
  if (measurement === null) return JSON.stringify(columns)
  return JSON.stringify({ ...columns, measurement: measurement.id, value: points.map((p) => measurement.values.get(p.id)?.value ?? null) })
}

/**
 * The world map (contract: World-map device; clients.md §4.30): every active, located, non-test
 * device, rendered once and served from memory with an ETag and compressed bodies; from the same
 * build, the explorer's compact map (only what its map draws). A cheap fingerprint query on the
 * revisions decides whether the renderings are stale, so the maps change as soon as a device or
 * its latest reading does; `system_tags` depend on the clock, so a build also expires after
 * `maxAgeMs`.
 */
export class WorldMap {
  private built: Built | undefined
  private building: Promise<Built> | undefined

  constructor (private readonly handle: Handle, private readonly clock: Clock, private readonly maxAgeMs = 30_000) {}

  /** `GET /devices/world_map`: public devices only, the same body for everyone. */
  async publicMap (): Promise<MapBody> {
    return (await this.current()).body
  }

  /** `GET /devices/fresh_world_map`: the public map plus the private devices the caller may see. */
  async forViewer (viewer: Viewer | null): Promise<MapBody> {
    const built = await this.current()
    if (viewer === null) return built.body
    const key = isAdmin(viewer) ? 'admin' : String(viewer.id)
    const cached = built.viewerBodies.get(key)
    if (cached !== undefined) return cached
    const own = built.privateEntries.filter((e) => canSee(viewer, e))
    if (own.length === 0) return built.body
    const inner = built.body.json.slice(1, -1)
    const body = new MapBody(`[${inner}${inner === '' ? '' : ','}${own.map((e) => e.json).join(',')}]`, built.body.count + own.length)
    built.viewerBodies.set(key, body)
    trimOldest(built.viewerBodies, VIEWER_BODIES)
    return body
  }

  /**
   * `GET /devices/compact_map`: the same devices as `forViewer` (public ones, and the private ones
   * the viewer may see), in compactJson's columns; with `measurement` (its id as the query gives
   * it), each device's latest value of it. An id that names no measurement is a 404, as anywhere.
   */
  async compactMap (viewer: Viewer | null, measurement?: string): Promise<MapBody> {
    const measurementId = measurement === undefined ? null : recordIdOr404('Measurement', measurement)
    const built = await this.current()
    if (measurementId !== null && !built.measurements.has(measurementId)) throw errors.notFound('Measurement', measurementId)
    // A viewer who may see no private device of the map gets the public rendering.
    const viewing = viewer !== null && built.privateEntries.some((e) => canSee(viewer, e)) ? viewer : null
    if (viewing === null && measurementId === null) return built.compact
    const key = `${viewing === null ? 'public' : isAdmin(viewing) ? 'admin' : String(viewing.id)}#${measurementId ?? ''}`
    const cached = built.compactBodies.get(key)
    if (cached !== undefined) return cached
    const points = built.points.filter((p) => canSee(viewing, p))
    const values = measurementId === null ? null : { id: measurementId, values: built.values.get(measurementId) ?? new Map() }
    const body = new MapBody(compactJson(points, values), points.length)
    built.compactBodies.set(key, body)
    trimOldest(built.compactBodies, COMPACT_BODIES)
    return body
  }

  /**
   * Two parts (worldMapFingerprint): what may hide a device or change who sees it (count, last
   * edit, the owners' revisions), and the devices' revisions, which readings move. A change of the
   * first (made private, archived) is rebuilt before answering; a new reading only moves values
   * and conditions, so the previous rendering is served while the next one builds: under steady
   * ingest the map stays as fast as when idle.
   */
  private async fingerprint (): Promise<{ devices: string, readings: string }> {
    return await worldMapFingerprint(this.handle)
  }

  private async current (): Promise<Built> {
    const { devices, readings } = await this.fingerprint()
    const fingerprint = `${devices}#${readings}`
    const now = this.clock().getTime()
    const built = this.built
    if (built !== undefined && built.fingerprint === fingerprint && now - built.builtAt < this.maxAgeMs) return built
    // Concurrent requests share one rebuild.
    const rebuild = (this.building ??= this.build(fingerprint).finally(() => { this.building = undefined }))
    if (built !== undefined && built.fingerprint.startsWith(`${devices}#`) && now - built.builtAt < this.maxAgeMs) {
      rebuild.catch(() => { /* the next request rebuilds again and reports */ })
      return built
    }
    return await rebuild
  }

  private async build (fingerprint: string): Promise<Built> {
    const now = this.clock()
    const { devices: rows, tags: tagRows, latest: latestRows, measurements } = await worldMapRows(this.handle)
    const tagsOf = new Map<number, string[]>()
    for (const t of tagRows) {
      const list = tagsOf.get(t.device_id)
      if (list === undefined) tagsOf.set(t.device_id, [t.name])
      else list.push(t.name)
    }
    const dataOf = new Map<number, { values: Record<string, number | string | null>, recorded: number, added: number }>()
    const values = new Map<number, Map<number, Latest>>()
    for (const l of latestRows) {
      if (l.measurement_id !== null) {
        let ofDevice = values.get(l.measurement_id)
        if (ofDevice === undefined) values.set(l.measurement_id, ofDevice = new Map())
        const seen = ofDevice.get(l.device_id)
        if (seen === undefined || Number(l.recorded_ms) > seen.recorded) ofDevice.set(l.device_id, { value: l.value, recorded: Number(l.recorded_ms) })
      }
      let data = dataOf.get(l.device_id)
      if (data === undefined) dataOf.set(l.device_id, data = { values: {}, recorded: 0, added: 0 })
      data.values[String(l.sensor_id)] = l.value
      data.values[`${l.sensor_id}_raw`] = l.raw_value
      data.recorded = Math.max(data.recorded, Number(l.recorded_ms))
      data.added = Math.max(data.added, Number(l.added_ms))
    }
    const publicJson: string[] = []
    const privateEntries: Entry[] = []
    const points: Point[] = []
    for (const row of rows) {
      const createdAt = new Date(Number(row.created_ms))
      const lastReadingAt = row.last_reading_ms === null ? null : new Date(Number(row.last_reading_ms))
      const data = dataOf.get(row.id)
      const country = countryName(row.country_code)
      const tags = systemTags({ exposure: row.exposure, createdAt, lastReadingAt }, now)
      // The explorer's conditionOf, from the same system tags as this build's world map.
      points.push({
        id: row.id,
        ownerId: row.owner_id,
        isPrivate: row.is_private,
        lat: Math.round(row.latitude * 1e5),
        lng: Math.round(row.longitude * 1e5),
        condition: lastReadingAt === null ? 'n' : tags.includes('online') ? 'o' : 'f',
        exposure: tags.includes('indoor') ? 'i' : 'o',
        name: row.name
      })
      const item = {
        id: row.id,
        name: row.name,
        description: row.description,
        owner_id: row.owner_id,
        owner_username: row.owner_username,
        latitude: row.latitude,
        longitude: row.longitude,
        city: row.city,
        country_code: row.country_code,
        kit_id: row.kit_id,
        state: row.state,
        system_tags: tags,
        user_tags: tagsOf.get(row.id) ?? [],
        exposure: row.exposure,
        added_at: formatTimestamp(createdAt),
        last_reading_at: formatTimestamp(lastReadingAt),
        location: { exposure: row.exposure, latitude: row.latitude, longitude: row.longitude, city: row.city, country },
        hardware: hardwareOf({
          lastStatusMessage: row.hw_ver === null ? null : { hw_ver: row.hw_ver },
          hardwareNameOverride: row.hardware_name_override,
          hardwareTypeOverride: row.hardware_type_override,
          hardwareVersionOverride: row.hardware_version_override,
          hardwareSlugOverride: row.hardware_slug_override
        }, false),
        data: data === undefined
          ? {}
          : {
              ...data.values,
              recorded_at: formatTimestamp(new Date(data.recorded)),
              calibrated_at: formatTimestamp(new Date(data.added)),
              added_at: formatTimestamp(new Date(data.added))
            }
      }
      const json = JSON.stringify(item)
      if (row.is_private) privateEntries.push({ ownerId: row.owner_id, isPrivate: true, json })
      else publicJson.push(json)
    }
    const body = new MapBody(`[${publicJson.join(',')}]`, publicJson.length)
    const publicPoints = points.filter((p) => !p.isPrivate)
    const compact = new MapBody(compactJson(publicPoints, null), publicPoints.length)
    // Everyone gets the public maps: both encodings are made before they are served.
    await Promise.all([body.encode('gzip'), body.encode('br'), compact.encode('gzip'), compact.encode('br')])
    const built: Built = {
      fingerprint,
      builtAt: now.getTime(),
      body,
      privateEntries,
      viewerBodies: new Map(),
      points,
      values,
      measurements: new Set(measurements),
      compact,
      compactBodies: new Map()
    }
    this.built = built
    return built
  }
}
