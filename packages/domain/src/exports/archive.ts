import { createHash, createHmac } from 'node:crypto'
import path from 'node:path'
import { inTransaction, type Handle, stampCsvArchiveRequest } from '@esp/db'
import { type Viewer } from '../auth/viewer.js'
import { safeEqual } from '../auth/secrets.js'
import { assertCanWrite, findDeviceAccess } from '../devices/device-access.js'
import { ApiError, errors } from '../errors.js'
import type { JobSender } from '../jobs.js'

/** One CSV archive request per device per 6 hours (contract: Limits), a rolling window. */
export const ARCHIVE_INTERVAL_MS = 6 * 3600 * 1000

/** Archive files are named `<device>_<epoch ms>.csv`, as the established platform names them (behaviour.md §11). */
export const ARCHIVE_FILE = /^(\d{1,9})_(\d{13})\.csv$/

/** Where archives live under a DATA_DIR: the exporter writes them there and the api serves them. */
export const archiveDir = (dataDir: string): string => path.join(path.resolve(dataDir), 'archives')

/** The key that signs archive links, derived from the platform secret so that it is never reused as is. */
export function archiveLinkSecret (platformSecret: string): string {
  return createHash('sha256').update(`csv-archive-link:${platformSecret}`).digest('base64url')
}

export interface ArchiveRequestContext {
  database: Handle
  send: JobSender
  now: () => Date
}

/**
 * `GET /devices/:id/readings/csv_archive`: 404 unknown (or private to someone else), 401
 * anonymous, 403 neither owner nor admin; the 6-hour rule is a conditional UPDATE, so of two concurrent requests the second waits
 * on the row lock, re-reads the committed time and gets 420. The job commits with the stamp.
 */
export async function requestCsvArchive (ctx: ArchiveRequestContext, viewer: Viewer | null, deviceId: string, baseUrl: string): Promise<void> {
  const device = await findDeviceAccess(ctx.database, deviceId)
  assertCanWrite(viewer, device)
  const now = ctx.now()
  await inTransaction(ctx.database, async (tx) => {
    const stamped = await stampCsvArchiveRequest(tx, device.id, now, new Date(now.getTime() - ARCHIVE_INTERVAL_MS))
    if (!stamped) throw errors.enhanceYourCalm('You can only make one CSV archive request every 6 hours.')
    await ctx.send(tx, 'csvArchive', { deviceId: device.id, userId: viewer.id, baseUrl })
  })
}

const signature = (secret: string, deviceId: number, file: string, expires: number): string =>
  createHmac('sha256', secret).update(`${deviceId}/${file}/${expires}`).digest('base64url')

/** The path and query of a download link valid until `expiresAt` (whole seconds). */
export function signArchiveLink (secret: string, deviceId: number, file: string, expiresAt: Date): string {
  const expires = Math.floor(expiresAt.getTime() / 1000)
  return `/v0/devices/${deviceId}/readings/csv_archive/${file}?expires=${expires}&signature=${signature(secret, deviceId, file, expires)}`
}

const badLink = (message: string): ApiError =>
  new ApiError({ code: 'ESP_ARCHIVE_LINK_INVALID', id: 'forbidden', statusCode: 403, message })

/**
 * Checks a download link: the signature covers device, file and expiry, so none can be changed;
 * it is compared in constant time. Forged and expired links are both 403, with their own message.
 */
export function verifyArchiveLink (secret: string, link: { deviceId: string, file: string, expires?: string | undefined, signature?: string | undefined }, now: Date): { deviceId: number, file: string } {
  const match = ARCHIVE_FILE.exec(link.file)
  if (match === null || match[1] !== link.deviceId) throw errors.notFound('CSV archive', link.file)
  if (link.expires === undefined || !/^\d{1,12}$/.test(link.expires) || link.signature === undefined || link.signature === '') throw badLink('This download link is not valid')
  const deviceId = Number(link.deviceId)
  const expected = signature(secret, deviceId, link.file, Number(link.expires))
  if (!safeEqual(expected, link.signature)) throw badLink('This download link is not valid')
  if (Number(link.expires) * 1000 < now.getTime()) throw badLink('This download link has expired; request a new CSV archive')
  return { deviceId, file: link.file }
}
