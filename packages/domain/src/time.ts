import { DateTime } from 'luxon'

/** The one way timestamps leave the platform: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (contract). */
export function formatTimestamp (value: Date): string
export function formatTimestamp (value: Date | null | undefined): string | null
export function formatTimestamp (value: Date | null | undefined): string | null {
  if (value === null || value === undefined) return null
  return DateTime.fromJSDate(value, { zone: 'utc' }).toFormat("yyyy-MM-dd'T'HH:mm:ss'Z'")
}

export type Clock = () => Date
export const systemClock: Clock = () => new Date()
