import type { FastifyRequest } from 'fastify'
import { type DeviceRecord, deviceService, presentDevices, presentUser, type UserRow, type UserView } from '@esp/domain'
import { baseUrl } from '@esp/http'
import type { ApiContext } from '../../context.js'

/** Users with the devices already read for them, rendered for the caller. */
function present (request: FastifyRequest, rows: UserRow[], deviceRows: DeviceRecord[], now: Date): UserView[] {
  const base = baseUrl(request)
  const views = presentDevices(deviceRows, { viewer: request.viewer, baseUrl: base, now })
  const byOwner = new Map<number, unknown[]>()
  deviceRows.forEach((row, i) => {
    const list = byOwner.get(row.ownerId) ?? []
    list.push(views[i])
    byOwner.set(row.ownerId, list)
  })
  return rows.map((row) => presentUser(row, { viewer: request.viewer, baseUrl: base, devices: byOwner.get(row.id) ?? [] }))
}

/**
 * Users with their devices, rendered for the caller. Clients read full device objects here
 * (clients.md §4.28), without data; the devices of the whole page take a fixed number of queries.
 */
export async function renderUsers (ctx: ApiContext, request: FastifyRequest, rows: UserRow[]): Promise<UserView[]> {
  const now = ctx.clock()
  return present(request, rows, await deviceService.devicesOfOwners(request.reads.database, rows.map((r) => r.id), request.viewer), now)
}

export async function renderUser (ctx: ApiContext, request: FastifyRequest, row: UserRow): Promise<UserView> {
  return renderOne(ctx, request, row, await deviceService.devicesOfOwners(request.reads.database, [row.id], request.viewer))
}

function renderOne (ctx: ApiContext, request: FastifyRequest, row: UserRow, devices: DeviceRecord[]): UserView {
  const [user] = present(request, [row], devices, ctx.clock())
  if (user === undefined) throw new Error('no user rendered')
  return user
}
