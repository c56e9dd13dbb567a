import t from 'tap'
import fc from 'fast-check'
import { and, isNull } from 'drizzle-orm'
import {
  devices, type Handle, listDeviceStamps, userStamps, devicePageStamps, deviceStamps, visibleExperimentDevices, readDevicePage, readDevices, readDevicesOfOwners, readUserWithDevices, searchHits, visibleDrizzle, visibleSql,
  type Visibility
} from '@esp/db'
import { createTestDatabase } from '@esp/db/testing'
import { canSee, type Viewer, visibility } from '@esp/domain'

// The privacy rule (contract: a private device is hidden from other users) is written once as SQL
// (packages/db queries/visibility.ts) in three forms: the prepared text of the device read
// statements, a postgres.js fragment and a Drizzle condition. Over generated populations each
// form, in the statements that use it and on its own, selects exactly the devices that the
// domain's canSee accepts for every kind of viewer. Archived devices are hidden from everyone.

interface Generated { ownerIndex: number, isPrivate: boolean, archived: boolean }

const OWNERS = 4

t.test('every form of the privacy rule selects exactly what canSee accepts', async (t) => {
  const database = await createTestDatabase(t)
  const { sql } = database
  // Four users who own devices: two citizens, a researcher and an admin (who owns devices too).
  const roles = ['citizen', 'citizen', 'researcher', 'admin'] as const
  const owners: Viewer[] = []
  for (const [i, role] of roles.entries()) {
    const [row] = await sql<Array<{ id: number }>>`
      insert into users (username, email, role) values (${`vis-${i}`}, ${`vis-${i}@example.org`}, ${role}) returning id`
    if (row === undefined) throw new Error('no user')
    owners.push({ id: row.id, username: `vis-${i}`, role })
  }
  // A citizen and an admin who own nothing, and the anonymous caller.
  const [outsider, outsideAdmin] = await sql<Array<{ id: number }>>`
    insert into users (username, email, role) values ('vis-out', 'vis-out@example.org', 'citizen'), ('vis-adm', 'vis-adm@example.org', 'admin') returning id`
  if (outsider === undefined || outsideAdmin === undefined) throw new Error('no user')
  const viewers: Array<Viewer | null> = [
    null, ...owners, { id: outsider.id, username: 'vis-out', role: 'citizen' }, { id: outsideAdmin.id, username: 'vis-adm', role: 'admin' }
  ]

  const [experiment] = await sql<Array<{ id: number }>>`insert into experiments (owner_id, name) values (${outsider.id}, 'vis') returning id`
  if (experiment === undefined) throw new Error('no experiment')

  const population = fc.array(fc.record({ ownerIndex: fc.integer({ min: 0, max: OWNERS - 1 }), isPrivate: fc.boolean(), archived: fc.boolean() }), { maxLength: 14 })
  let runs = 0
  await fc.assert(fc.asyncProperty(population, async (generated: Generated[]) => {
    runs++
    await sql`delete from devices`
    const rows: Array<{ id: number, ownerId: number, isPrivate: boolean, archived: boolean }> = []
    for (const d of generated) {
      const ownerId = owners[d.ownerIndex]?.id ?? 0
      const [row] = await sql<Array<{ id: number }>>`
        insert into devices (owner_id, name, is_private, archived_at, state)
        values (${ownerId}, 'probe', ${d.isPrivate}, case when ${d.archived}::bool then now() end, ${d.archived ? 'archived' : 'not_configured'})
        returning id`
      if (row === undefined) throw new Error('no device')
      rows.push({ id: row.id, ownerId, isPrivate: d.isPrivate, archived: d.archived })
    }
    const all = rows.map((d) => d.id)
    await sql`insert into experiment_devices (experiment_id, device_id) select ${experiment.id}, unnest(${all}::int4[])`
    // The batched stamps statement finds every active device it is asked for, whoever asks (access is checked after it).
    const stamped = [...(await deviceStamps(database, all)).found.keys()].sort((a, b) => a - b)
    const active = rows.filter((d) => !d.archived).map((d) => d.id).sort((a, b) => a - b)
    if (!same(stamped, active)) throw new Error(`deviceStamps: ${JSON.stringify(stamped)}, active: ${JSON.stringify(active)}`)
    for (const viewer of viewers) {
      const v = visibility(viewer)
      const who = viewer === null ? 'anonymous' : `${viewer.role} ${viewer.id}`
      const expected = rows.filter((d) => !d.archived && canSee(viewer, d)).map((d) => d.id)
      const scope = { ...v, withData: false }
      const forms: Record<string, number[]> = {
        'visibleText, page statement': (await readDevicePage(database, { limit: 1000, offset: 0 }, scope)).rows.map((d) => d.id),
        'visibleText, by ids statement': (await readDevices(database, all, scope)).map((d) => d.id),
        'visibleText, of owners statement': (await readDevicesOfOwners(database, owners.map((o) => o.id), scope)).map((d) => d.id),
        visibleSql: await bySql(database, v),
        'visibleSql, search statement': (await searchHits(database, { query: "'probe':*", like: '%probe%' }, { limit: 1000, offset: 0 }, v))
          .filter((hit) => hit.kind === 'Device').map((hit) => hit.id),
        visibleDrizzle: await byDrizzle(database, v),
        'visibleDrizzle, experiments statement': (await visibleExperimentDevices(database, [experiment.id], v)).map((row) => row.deviceId),
        'visibleDrizzle, list statement': (await listDeviceStamps(database, { filters: [], sort: [], page: 1, perPage: 1000 }, { withTags: [] }, v)).found.rows.map((d) => d.id),
        'visibleTextFor, batched user stamps': (await userStamps(database, owners.map((o) => ({ userId: o.id, viewer: v })))).found.flatMap((u) => u?.devices.map((d) => d.id) ?? []).sort((a, b) => a - b),
        'visibleText, one user\'s stamps': (await Promise.all(owners.map(async (o) => (await userStamps(database, [{ userId: o.id, viewer: v }])).found[0]?.devices.map((d) => d.id) ?? []))).flat().sort((a, b) => a - b),
        'visibleText, page stamps': (await devicePageStamps(database, { limit: 1000, offset: 0 }, v)).found.rows.map((d) => d.id)
      }
      for (const [form, ids] of Object.entries(forms)) {
        if (!same(ids, expected)) throw new Error(`${form} for ${who}: ${JSON.stringify(ids)}, canSee: ${JSON.stringify(expected)} of ${JSON.stringify(rows)}`)
      }
      // The page statement's total and each owner's device ids follow the rule too.
      const page = await readDevicePage(database, { limit: 1, offset: 0 }, scope)
      if (page.total !== expected.length) throw new Error(`page total for ${who}: ${page.total}, canSee: ${expected.length}`)
      for (const owner of owners) {
        const own = rows.filter((d) => d.ownerId === owner.id && !d.archived && canSee(viewer, d)).map((d) => d.id)
        const { rows: ofUser } = await readUserWithDevices(database, owner.id, scope)
        if (!same(ofUser.map((d) => d.id), own)) throw new Error(`user statement for ${who}, owner ${owner.id}: ${JSON.stringify(ofUser.map((d) => d.id))}, canSee: ${JSON.stringify(own)}`)
        for (const device of ofUser) {
          if (!same(device.ownerDeviceIds, own)) throw new Error(`owner's device ids for ${who}: ${JSON.stringify(device.ownerDeviceIds)}, canSee: ${JSON.stringify(own)}`)
        }
      }
    }
  }), { numRuns: 40 })
  t.equal(runs >= 40, true, 'every generated population was checked')
})

const same = (a: number[], b: number[]): boolean => JSON.stringify([...a].sort((x, y) => x - y)) === JSON.stringify([...b].sort((x, y) => x - y))

async function bySql (h: Handle, v: Visibility): Promise<number[]> {
  const rows = await h.sql<Array<{ id: number }>>`select d.id from devices d where d.archived_at is null and ${visibleSql(h.sql, 'd', v)}`
  return rows.map((r) => r.id)
}

async function byDrizzle (h: Handle, v: Visibility): Promise<number[]> {
  const rows = await h.db.select({ id: devices.id }).from(devices)
    .where(and(isNull(devices.archivedAt), visibleDrizzle({ isPrivate: devices.isPrivate, ownerId: devices.ownerId }, v)))
  return rows.map((r) => r.id)
}
