import { Type, type Static, type TSchema } from '@sinclair/typebox'

/** The only place queue names and payload shapes are defined (STYLE.md §3.9). */
export const MailPayload = Type.Object({
  to: Type.String({ minLength: 3 }),
  subject: Type.String({ minLength: 1 }),
  text: Type.String()
}, { additionalProperties: false })
export type MailPayload = Static<typeof MailPayload>

export const queues = {
  mail: { name: 'mail', payload: MailPayload }
} as const satisfies Record<string, { name: string, payload: TSchema }>

export type QueueKey = keyof typeof queues
export type PayloadOf<K extends QueueKey> = Static<(typeof queues)[K]['payload']>
