import { createWriteStream } from 'node:fs'
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { copyArchiveCsv, csvArchiveTarget, type Database, deviceSensorColumns } from '@esp/db'
import { csvCell, formatTimestamp, type JobSender, signArchiveLink } from '@esp/domain'
import type { CsvArchivePayload } from '@esp/jobs'

export interface CsvArchiveDeps {
  database: Database
  send: JobSender
  /** DATA_DIR/archives, which the api serves */
  archiveDir: string
  linkSecret: string
  linkTtlSeconds: number
  now: () => Date
}

/**
 * Writes every reading of a device to `<device>_<epoch ms>.csv` and mails whoever asked a signed
 * link valid for CSV_ARCHIVE_LINK_TTL_SECONDS (behaviour.md §11). The rows stream from COPY to the
 * file with backpressure, so memory does not grow with the device's history; the file appears
 * under its name only when complete, and replaces the device's earlier archives.
 */
export async function handleCsvArchive (deps: CsvArchiveDeps, payload: CsvArchivePayload): Promise<string | null> {
  const target = await csvArchiveTarget(deps.database, payload.deviceId, payload.userId)
  // Archived or deleted since the request, or the requester is gone: there is nobody to send it to.
  if (target === null) return null
  // Component order is sensor id order: stable between archives (behaviour.md §11).
  const columns = await deviceSensorColumns(deps.database, target.id)
  const header = ['timestamp', ...columns.map((c) => csvCell(`${c.measurement ?? c.name} in ${c.unit ?? ''} (${c.name})`))].join(',') + '\n'
  const now = deps.now()
  const dir = path.join(deps.archiveDir, String(target.id))
  const file = `${target.id}_${now.getTime()}.csv`
  await mkdir(dir, { recursive: true })
  const partial = path.join(dir, `${file}.part`)
  const copy = await copyArchiveCsv(deps.database, target.id, columns.map((c) => c.id))
  try {
    await pipeline(async function * () {
      yield Buffer.from(header)
      for await (const chunk of copy.stream) yield chunk as Buffer
    }, createWriteStream(partial, { mode: 0o600 }))
  } catch (err) {
    await rm(partial, { force: true })
    throw err
  } finally {
    copy.stream.destroy()
    await copy.closed
  }
  await rename(partial, path.join(dir, file))
  for (const old of await readdir(dir)) if (old !== file) await rm(path.join(dir, old), { force: true })

  const expiresAt = new Date(now.getTime() + deps.linkTtlSeconds * 1000)
  const link = `${payload.baseUrl}${signArchiveLink(deps.linkSecret, target.id, file, expiresAt)}`
  await deps.send(deps.database, 'mail', {
    to: target.email,
    subject: 'Device CSV Archive Ready',
    text: `Hello ${target.username},\n\nthe CSV archive of every reading of your device "${target.name}" is ready:\n\n${link}\n\n` +
      `The link works until ${formatTimestamp(expiresAt)}.\n`
  })
  return file
}
