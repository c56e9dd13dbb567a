import { createHash } from 'node:crypto'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import { type Handle, trimOldest, worldMapFingerprint, worldMapRows } from '@esp/db'
import { isAdmin, type Viewer } from '../auth/viewer.js'
import { countryName } from '../geo/country.js'
import { formatTimestamp, type Clock } from '../time.js'
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

interface Entry { ownerId: number, isPrivate: boolean, json: string }

interface Built {
  fingerprint: string
  builtAt: number
  /** public devices, rendered and compressed once */
  body: MapBody
  /** private devices, for their owners and admins (fresh_world_map) */
  privateEntries: Entry[]
  /** the fresh maps of viewers with private devices (key: user id, or "admin"), oldest first */
  viewerBodies: Map<string, MapBody>
}

/**
 * The world map (contract: World-map device; clients.md §4.30): every active, located, non-test
 * device, rendered once and served from memory with an ETag and compressed bodies. A cheap
 * fingerprint query (device count and the newest device, owner and reading change) decides
 * whether the rendering is stale, so the map changes as soon as a device or its latest reading
 * does; `system_tags` depend on the clock, so a rendering also expires after `maxAgeMs`.
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
   * Two parts: what a device or its owner says (count, last edit) and when the newest reading
   * arrived. A change of the first may hide a device (made private, archived), so it is rebuilt
   * before answering; a new reading only moves values, so the previous rendering is served while
   * the next one builds: under steady ingest the map stays as fast as when idle.
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
    const { devices: rows, tags: tagRows, latest: latestRows } = await worldMapRows(this.handle)
    const tagsOf = new Map<number, string[]>()
    for (const t of tagRows) {
      const list = tagsOf.get(t.device_id)
      if (list === undefined) tagsOf.set(t.device_id, [t.name])
      else list.push(t.name)
    }
    const dataOf = new Map<number, { values: Record<string, number | string | null>, recorded: number, added: number }>()
    for (const l of latestRows) {
      let data = dataOf.get(l.device_id)
      if (data === undefined) dataOf.set(l.device_id, data = { values: {}, recorded: 0, added: 0 })
      data.values[String(l.sensor_id)] = l.value
      data.values[`${l.sensor_id}_raw`] = l.raw_value
      data.recorded = Math.max(data.recorded, Number(l.recorded_ms))
      data.added = Math.max(data.added, Number(l.added_ms))
    }
    const publicJson: string[] = []
    const privateEntries: Entry[] = []
    for (const row of rows) {
      const createdAt = new Date(Number(row.created_ms))
      const lastReadingAt = row.last_reading_ms === null ? null : new Date(Number(row.last_reading_ms))
      const data = dataOf.get(row.id)
      const country = countryName(row.country_code)
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
        system_tags: systemTags({ exposure: row.exposure, createdAt, lastReadingAt }, now),
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
    // Everyone gets the public map: both encodings are made before it is served.
    await Promise.all([body.encode('gzip'), body.encode('br')])
    const built: Built = { fingerprint, builtAt: now.getTime(), body, privateEntries, viewerBodies: new Map() }
    this.built = built
    return built
  }
}
