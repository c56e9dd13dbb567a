import { and, inArray, isNull, sql as drizzleSql, type SQL } from 'drizzle-orm'
import type { Handle } from '../client.js'
import { tags } from '../schema/catalogue.js'
import { devices, deviceTags, postprocessings } from '../schema/devices.js'
import { users } from '../schema/users.js'
import type { DeviceStampRow, Stamped } from './revisions.js'
import { type FilterSpec, type ListQuery, listOrder, listPage, listWhere } from './lists.js'
import { visibleDrizzle, type Visibility } from './visibility.js'

/*
 * The filtered, sorted list of devices (contract: Filtering): its filters and the statement that
 * finds a page's stamps; the page's bodies come from queries/devices.ts and the kept reads.
 */

const tagExists = (condition: SQL): SQL =>
  drizzleSql`exists (select 1 from ${deviceTags} join ${tags} on ${tags.id} = ${deviceTags.tagId} where ${deviceTags.deviceId} = ${devices.id} and ${condition})`

/** Contract: Filtering (devices), older-form keys too; secrets and admin columns for admins only. */
export const deviceFilters: FilterSpec = {
  id: { column: devices.id, type: 'integer' },
  uuid: { column: devices.uuid, type: 'uuid' },
  name: { column: devices.name, type: 'text' },
  description: { column: devices.description, type: 'text' },
  owner_id: { column: devices.ownerId, type: 'integer' },
  owner_username: { column: drizzleSql`(select ${users.username} from ${users} where ${users.id} = ${devices.ownerId})`, type: 'text' },
  created_at: { column: devices.createdAt, type: 'timestamp' },
  updated_at: { column: devices.updatedAt, type: 'timestamp' },
  last_recorded_at: { column: devices.lastReadingAt, type: 'timestamp' },
  last_reading_at: { column: devices.lastReadingAt, type: 'timestamp' },
  state: { column: devices.state, type: 'text' },
  exposure: { column: devices.exposure, type: 'text' },
  kit_id: { column: devices.kitId, type: 'integer' },
  geohash: { column: devices.geohash, type: 'text' },
  city: { column: devices.city, type: 'text' },
  country_code: { column: devices.countryCode, type: 'text' },
  tag_name: { column: tags.name, type: 'text', wrap: tagExists },
  tags_name: { column: tags.name, type: 'text', wrap: tagExists },
  postprocessing_id: { column: drizzleSql`(select ${postprocessings.id} from ${postprocessings} where ${postprocessings.deviceId} = ${devices.id})`, type: 'integer' },
  mac_address: { column: drizzleSql`${devices.macAddress}::text`, type: 'text', adminOnly: true },
  token: { column: devices.deviceToken, type: 'text', adminOnly: true },
  device_token: { column: devices.deviceToken, type: 'text', adminOnly: true },
  is_private: { column: devices.isPrivate, type: 'boolean', adminOnly: true },
  is_test: { column: devices.isTest, type: 'boolean', adminOnly: true }
}

/** Great-circle distance in km from a point, in SQL: `near` orders by it (behaviour.md §5.4). */
function distanceKm (lat: number, lng: number): SQL {
  return drizzleSql`(6371 * 2 * asin(sqrt(power(sin(radians(${devices.latitude} - ${lat}::float8) / 2), 2)
    + cos(radians(${lat}::float8)) * cos(radians(${devices.latitude})) * power(sin(radians(${devices.longitude} - ${lng}::float8) / 2), 2))))`
}

export interface DeviceListOptions {
  /** devices with any of these tags */
  withTags: string[]
  /** nearest first, within `within` km of the point */
  near?: { latitude: number, longitude: number, within: number } | undefined
}

/** What the list's cheap statement reads of each device: the stamp's columns (revisions.ts). */
const stampColumns = {
  id: devices.id,
  ownerId: devices.ownerId,
  isPrivate: devices.isPrivate,
  revision: devices.revision,
  ownerRevision: drizzleSql<number>`(select ${users.revision} from ${users} where ${users.id} = ${devices.ownerId})`,
  statusRevision: drizzleSql<number>`coalesce((select s.revision from device_ingest_status s where s.device_id = ${devices.id}), 0)`,
  generation: drizzleSql<number>`(select value from catalogue_generation where id = 1)`,
  authGeneration: drizzleSql<number>`(select value from auth_generation where id = 1)`
}

/** The stamps of a page of the active devices the viewer may see, filtered and sorted, the total, and the auth generation. */
export async function listDeviceStamps (h: Handle, query: ListQuery, options: DeviceListOptions, v: Visibility): Promise<Stamped<{ rows: DeviceStampRow[], total: number }>> {
  // The filters' conditions are in the scope and again in listPage's own: the statement as it was.
  const conditions: Array<SQL | undefined> = [isNull(devices.archivedAt), visibleDrizzle({ isPrivate: devices.isPrivate, ownerId: devices.ownerId }, v), listWhere(deviceFilters, query.filters)]
  let order: SQL[] | undefined
  if (options.withTags.length > 0) conditions.push(tagExists(inArray(tags.name, options.withTags)))
  if (options.near !== undefined) {
    const distance = distanceKm(options.near.latitude, options.near.longitude)
    conditions.push(drizzleSql`${devices.latitude} is not null and ${distance} <= ${options.near.within}`)
    order = [drizzleSql`${distance} asc`, ...listOrder(deviceFilters, query.sort)]
  }
  const { rows, total } = await listPage(h, devices, deviceFilters, query, devices.id, and(...conditions), order, stampColumns as unknown as { id: typeof devices.id })
  const read = rows as unknown as Array<typeof stampColumns & Record<keyof typeof stampColumns, number & boolean>>
  return {
    found: {
      rows: read.map((r) => ({ id: r.id, ownerId: r.ownerId, isPrivate: r.isPrivate, stamp: { revision: r.revision, ownerRevision: r.ownerRevision, statusRevision: r.statusRevision, generation: r.generation } })),
      total
    },
    // An empty page read none: the caller checks credentials the full way.
    authGeneration: read[0]?.authGeneration
  }
}
