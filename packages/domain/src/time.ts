/**
 * The one way timestamps leave the platform: `YYYY-MM-DDTHH:MM:SSZ`, UTC, no fraction (contract).
 * Built from toISOString (always UTC) rather than a formatter: lists and rollups format thousands
 * of times per response, and this is a hot path.
 */
export function formatTimestamp (value: Date): string
export function formatTimestamp (value: Date | null | undefined): string | null
export function formatTimestamp (value: Date | null | undefined): string | null {
  if (value === null || value === undefined) return null
  const iso = value.toISOString()
  // Years outside 0000-9999 print with a sign and six digits; they keep the full ISO form.
  return iso.length === 24 ? `${iso.slice(0, 19)}Z` : iso
}

export type Clock = () => Date
export const systemClock: Clock = () => new Date()
