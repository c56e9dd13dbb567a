import type { Handle } from '../client.js'
import { visibleText, visibleTextFor, type Visibility } from './visibility.js'

/*
 * The cheap statements of the reads (DESIGN.md, Read): what a device's or a user's representation
 * was last made from, as revisions that triggers bump in every writing transaction (migration
 * 0009), so that a process can send the bytes it kept when they still match. Each is one statement
 * on primary keys and the owner index, prepared once per connection.
 */

/**
 * What a device's representation shows, as revisions: its row (with its tags, postprocessing,
 * experiments, components and latest values), its owner's row and set of devices, its ingest
 * status, and the catalogue's generation.
 */
export interface RevisionStamp { revision: number, ownerRevision: number, statusRevision: number, generation: number }

/** A stamp as the read statements select it: `[revision, owner's, status's, generation]`. */
export type StampColumns = [number, number | null, number, number]

export const asStamp = ([revision, ownerRevision, statusRevision, generation]: StampColumns): RevisionStamp =>
  ({ revision, ownerRevision: ownerRevision ?? 0, statusRevision, generation })

/** An active device as the cheap statement reads it: who may see it, and its stamp. */
export interface DeviceStampRow { id: number, ownerId: number, isPrivate: boolean, stamp: RevisionStamp }

const GENERATION = '(select value from catalogue_generation where id = 1)'
// The credentials' generation, read by the same statement: a remembered token is checked by it
// (Authenticator.remembered), so a signed-in read costs no round trip more than an anonymous one.
const AUTH = '(select value from auth_generation where id = 1) as auth_generation'
const STATUS = (alias: string): string => `coalesce((select s.revision from device_ingest_status s where s.device_id = ${alias}.id), 0)`

// One device, what a batch of one asks: a plan on the primary key, without an array to scan.
const byId = `select ${AUTH}, ${GENERATION} as generation, x.* from (select 1) one left join lateral (
    select d.id, d.owner_id, d.is_private, d.revision, u.revision as owner_revision, ${STATUS('d')} as status_revision
    from devices d join users u on u.id = d.owner_id where d.id = (select $1::int4) and d.archived_at is null) x on true`

// Devices by id, for a batch of requests (domain's Barrier): one row with a null id when none is
// found, so the auth generation still comes back. Arrays are read through subqueries, as in
// queries/devices.ts: with `any($1)` the plan PostgreSQL kept scanned far more than the ids.
const byIds = `select ${AUTH}, ${GENERATION} as generation, x.* from (select 1) one left join lateral (
    select d.id, d.owner_id, d.is_private, d.revision, u.revision as owner_revision, ${STATUS('d')} as status_revision
    from unnest((select $1::int4[])) as wanted(id) join devices d on d.id = wanted.id join users u on u.id = d.owner_id
    where d.archived_at is null) x on true`

// The page of GET /devices without filters, as readDevicePage walks it (queries/devices.ts), and
// its total; one row with a null id when the page is past the end.
const page = `with wanted as (select d.id, d.owner_id, d.is_private, d.revision from devices d
    where d.archived_at is null and ${visibleText('d')} order by d.id limit (select $1::int8) offset (select $4::int8))
  select (select count(*) from devices c where c.archived_at is null and ${visibleText('c')}) as total, ${GENERATION} as generation, ${AUTH},
    w.id, w.owner_id, w.is_private, w.revision, u.revision as owner_revision, ${STATUS('w')} as status_revision
  from (select 1) one left join (wanted w join users u on u.id = w.owner_id) on true order by w.id`

// Users (GET /users/:id, /me) for a batch of requests, each with the viewer it is for: the user's
// revision, and one row for each of their devices that viewer may see (flat rows: aggregating
// them as json cost the statement and the driver more than the rows); one row of nulls but the
// auth generation when none is found. Admin flags go as 0 or 1: the driver cannot type an array
// of booleans.
const ofUsers = `select ${AUTH}, ${GENERATION} as generation, x.* from (select 1) one left join lateral (
    select w.n, u.id, u.revision, d.id as device_id, d.is_private, d.revision as device_revision, ${STATUS('d')} as status_revision
    from unnest((select $1::int4[]), (select $2::int4[]), (select $3::int4[])) with ordinality as w(user_id, viewer_id, admin, n)
    join users u on u.id = w.user_id and u.archived_at is null
    left join devices d on d.owner_id = u.id and d.archived_at is null and ${visibleTextFor('d', 'w.viewer_id', '(w.admin <> 0)')}
    order by w.n, d.id) x on true`

// One user for one viewer: what a batch of one asks, without the batch's arrays to unnest.
const ofUser = `select ${AUTH}, ${GENERATION} as generation, x.* from (select 1) one left join lateral (
    select 1 as n, u.id, u.revision, d.id as device_id, d.is_private, d.revision as device_revision, ${STATUS('d')} as status_revision
    from users u left join devices d on d.owner_id = u.id and d.archived_at is null and ${visibleText('d')}
    where u.id = (select $1::int4) and u.archived_at is null order by d.id) x on true`

interface StampRaw { id: number, owner_id: number, is_private: boolean, revision: number, owner_revision: number, status_revision: number, generation: number }

const asRow = (r: StampRaw, generation: number): DeviceStampRow =>
  ({ id: r.id, ownerId: r.owner_id, isPrivate: r.is_private, stamp: { revision: r.revision, ownerRevision: r.owner_revision, statusRevision: r.status_revision, generation } })

/** What every stamp statement reads besides: the credentials' generation when it ran. */
export interface Stamped<T> { found: T, authGeneration: number | undefined }

/** The active devices with these ids as the cheap statement reads them (no access check), by id. */
export async function deviceStamps (h: Handle, ids: readonly number[]): Promise<Stamped<Map<number, DeviceStampRow>>> {
  const [only] = ids
  const rows = ids.length === 1 && only !== undefined
    ? await h.sql.unsafe<Array<StampRaw & { auth_generation: number }>>(byId, [only], { prepare: true })
    : await h.sql.unsafe<Array<StampRaw & { auth_generation: number }>>(byIds, [ids as number[]], { prepare: true })
  return { found: new Map(rows.filter((r) => r.id !== null).map((r) => [r.id, asRow(r, r.generation)])), authGeneration: rows[0]?.auth_generation }
}

/** The stamps of a page of the active devices the viewer may see, by id, and how many there are. */
export async function devicePageStamps (h: Handle, { limit, offset }: { limit: number, offset: number }, v: Visibility): Promise<Stamped<{ rows: DeviceStampRow[], total: number }>> {
  const rows = await h.sql.unsafe<Array<StampRaw & { total: number, auth_generation: number }>>(page, [limit, v.viewerId, v.admin, offset], { prepare: true })
  return {
    found: { rows: rows.filter((r) => r.id !== null).map((r) => asRow(r, r.generation)), total: Number(rows[0]?.total ?? 0) },
    authGeneration: rows[0]?.auth_generation ?? 0
  }
}

/** Whose user, for whom: one request of a batch of user stamps. */
export interface UserStampRequest { userId: number, viewer: Visibility }

/** A user's revision and the stamps of their devices that one viewer may see, by id. */
export interface UserStamp { revision: number, devices: DeviceStampRow[] }

/** For each request of a batch, in order, the active user's stamp, or undefined when there is no such user. */
export async function userStamps (h: Handle, requests: readonly UserStampRequest[]): Promise<Stamped<Array<UserStamp | undefined>>> {
  type Row = { auth_generation: number, generation: number, n: number | null, id: number, revision: number, device_id: number | null, is_private: boolean, device_revision: number, status_revision: number }
  const [only] = requests
  const rows = requests.length === 1 && only !== undefined
    ? await h.sql.unsafe<Row[]>(ofUser, [only.userId, only.viewer.viewerId, only.viewer.admin] as never[], { prepare: true })
    : await h.sql.unsafe<Row[]>(ofUsers, [requests.map((r) => r.userId), requests.map((r) => r.viewer.viewerId), requests.map((r) => r.viewer.admin ? 1 : 0)] as never[], { prepare: true })
  const found: Array<UserStamp | undefined> = requests.map(() => undefined)
  for (const row of rows) {
    if (row.n === null) continue
    const index = Number(row.n) - 1
    const user = found[index] ?? (found[index] = { revision: row.revision, devices: [] })
    if (row.device_id !== null) {
      user.devices.push({ id: row.device_id, ownerId: row.id, isPrivate: row.is_private, stamp: { revision: row.device_revision, ownerRevision: row.revision, statusRevision: row.status_revision, generation: row.generation } })
    }
  }
  return { found, authGeneration: rows[0]?.auth_generation }
}
