import { Type, type Static, type TSchema } from '@sinclair/typebox'

/** The only place queue names and payload shapes are defined (STYLE.md §3.9). */
export const MailPayload = Type.Object({
  to: Type.String({ minLength: 3 }),
  subject: Type.String({ minLength: 1 }),
  text: Type.String()
}, { additionalProperties: false })
export type MailPayload = Static<typeof MailPayload>

/** Builds a device's CSV archive and mails a signed link to whoever asked (behaviour.md §11). */
export const CsvArchivePayload = Type.Object({
  deviceId: Type.Integer({ minimum: 1 }),
  userId: Type.Integer({ minimum: 1 }),
  /** the api's public base URL as the request saw it, so the exporter needs no URL of its own */
  baseUrl: Type.String({ pattern: '^https?://' })
}, { additionalProperties: false })
export type CsvArchivePayload = Static<typeof CsvArchivePayload>

/** Stores a validated historical CSV import (its row in reading_imports). */
export const CsvImportPayload = Type.Object({ importId: Type.Integer({ minimum: 1 }) }, { additionalProperties: false })
export type CsvImportPayload = Static<typeof CsvImportPayload>

/**
 * Step 1 of a password reset, done away from the request: the request only enqueues this, the
 * same for every identifier, so its time reveals nothing about whether the account exists.
 */
export const PasswordResetPayload = Type.Object({
  /** an e-mail address or a username, as the caller typed it */
  identifier: Type.String({ minLength: 1, maxLength: 254 }),
  baseUrl: Type.String({ pattern: '^https?://' }),
  ttlSeconds: Type.Integer({ minimum: 1 }),
  /** epoch ms of the request: the code expires ttlSeconds after it, however long the job waited */
  requestedAt: Type.Integer({ minimum: 0 })
}, { additionalProperties: false })
export type PasswordResetPayload = Static<typeof PasswordResetPayload>

/** Scheduled jobs carry nothing: each run works from the database and the clock. */
export const ScheduledPayload = Type.Object({}, { additionalProperties: true })

export const queues = {
  mail: { name: 'mail', payload: MailPayload },
  passwordReset: { name: 'password-reset', payload: PasswordResetPayload },
  csvArchive: { name: 'csv-archive', payload: CsvArchivePayload },
  csvImport: { name: 'csv-import', payload: CsvImportPayload },
  purgeArchivedDevices: { name: 'purge-archived-devices', payload: ScheduledPayload },
  notifyStoppedPublishing: { name: 'notify-stopped-publishing', payload: ScheduledPayload },
  notifyLowBattery: { name: 'notify-low-battery', payload: ScheduledPayload }
} as const satisfies Record<string, { name: string, payload: TSchema }>

export type QueueKey = keyof typeof queues
export type PayloadOf<K extends QueueKey> = Static<(typeof queues)[K]['payload']>
