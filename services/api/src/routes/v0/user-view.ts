import type { FastifyRequest } from 'fastify'
import { deviceSummariesByOwner, presentUser, type UserRow, type UserView } from '@esp/domain'
import { baseUrl } from '@esp/http'
import type { ApiContext } from '../../context.js'

/** Users with their devices, rendered for the caller: one query for all the devices of the page. */
export async function renderUsers (ctx: ApiContext, request: FastifyRequest, rows: UserRow[]): Promise<UserView[]> {
  const now = ctx.clock()
  const devices = await deviceSummariesByOwner(ctx.database.db, rows.map((r) => r.id), request.viewer, now)
  const base = baseUrl(request)
  return rows.map((row) => presentUser(row, { viewer: request.viewer, baseUrl: base, devices: devices.get(row.id) ?? [] }))
}

export async function renderUser (ctx: ApiContext, request: FastifyRequest, row: UserRow): Promise<UserView> {
  const [user] = await renderUsers(ctx, request, [row])
  if (user === undefined) throw new Error('no user rendered')
  return user
}
