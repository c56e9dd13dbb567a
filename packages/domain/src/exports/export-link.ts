import { createHash, createHmac } from 'node:crypto'
import { exportLinkUser, type Handle } from '@esp/db'
import { safeEqual } from '../auth/secrets.js'
import type { Viewer } from '../auth/viewer.js'
import { assertCanSee, findDeviceAccess, parseDeviceId } from '../devices/device-access.js'
import { ApiError, errors } from '../errors.js'
import type { Clock } from '../time.js'

/**
 * Download links for a device's streamed export (issue 34): a browser cannot send a header with a
 * link, and a session token in a URL ends up in history, logs and referrers, so the signed-in
 * caller is handed a key good for one route of one device, for minutes. The key signs the route,
 * the device, the user and the expiry; it is read by that route alone, and by no authentication,
 * so it opens nothing else.
 */

/** Long enough to start a download after asking, short enough that a copied link is soon dead. */
export const EXPORT_LINK_TTL_SECONDS = 300

/** What the key is good for: part of what is signed, so a key is never valid for another use. */
const PURPOSE = 'GET /v0/devices/:device_id/readings/export'

/** `<user id>.<expires, epoch seconds>.<signature>` */
const KEY = /^(\d{1,9})\.(\d{1,12})\.([\w-]{43})$/

/** The key that signs export links, derived from the platform secret so that it is never reused as is. */
export function exportLinkSecret (platformSecret: string): string {
  return createHash('sha256').update(`export-link:${platformSecret}`).digest('base64url')
}

export interface ExportLinkContext {
  database: Handle
  secret: string
  now: Clock
}

const signature = (secret: string, deviceId: number, userId: number, expires: number): string =>
  createHmac('sha256', secret).update(`${PURPOSE}\n${deviceId}\n${userId}\n${expires}`).digest('base64url')

const badLink = (message: string): ApiError =>
  new ApiError({ code: 'ESP_EXPORT_LINK_INVALID', id: 'forbidden', statusCode: 403, message })

/**
 * `POST /devices/:device_id/readings/export/link`: a key for a caller who may see the device (a
 * private one: its owner and admins; to anyone else it does not exist, as everywhere).
 */
export async function createExportLink (ctx: ExportLinkContext, viewer: Viewer | null, rawDeviceId: string): Promise<{ deviceId: number, key: string, expiresAt: Date }> {
  const device = await findDeviceAccess(ctx.database, rawDeviceId)
  assertCanSee(viewer, device)
  if (viewer === null) throw errors.unauthorized()
  const expires = Math.floor(ctx.now().getTime() / 1000) + EXPORT_LINK_TTL_SECONDS
  return { deviceId: device.id, key: `${viewer.id}.${expires}.${signature(ctx.secret, device.id, viewer.id, expires)}`, expiresAt: new Date(expires * 1000) }
}

/**
 * The caller a key stands for on the export of this device: its signature is compared in constant
 * time before anything is looked up, so a forged key learns nothing about devices or users. A key
 * of another device, a changed one and an expired one are 403s; the user must still be active, and
 * the export then checks what that user may see, as for any request of theirs.
 */
export async function exportLinkViewer (ctx: ExportLinkContext, rawDeviceId: string, key: string): Promise<Viewer> {
  const deviceId = parseDeviceId(rawDeviceId)
  const match = KEY.exec(key)
  if (match === null) throw badLink('This download link is not valid')
  const [, userId = '', expires = '', given = ''] = match
  if (!safeEqual(signature(ctx.secret, deviceId, Number(userId), Number(expires)), given)) throw badLink('This download link is not valid')
  if (Number(expires) * 1000 < ctx.now().getTime()) throw badLink('This download link has expired; ask for a new one')
  const user = await exportLinkUser(ctx.database, Number(userId))
  if (user === null) throw badLink('This download link is not valid')
  return { id: user.id, username: user.username, role: user.role }
}
