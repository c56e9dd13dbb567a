import type { Tier } from '@esp/db'
import type { Rollup } from './rollup.js'

/** A piece of the requested range and where its states come from. */
export interface Segment { source: Tier | 'raw', from: Date, until: Date }

/**
 * A tier serves a rollup when every rollup bucket is a whole number of tier buckets: fixed rollups
 * that are multiples of the tier (weeks start on a Monday midnight, so days and hours divide them),
 * and calendar months and years, which begin on UTC midnights. In a time zone the stored tiers (UTC
 * hours and days) serve only where the zone's offsets are whole multiples of them.
 */
export function tierServes (tier: Tier, rollup: Rollup, zoneAlignmentMs?: number): boolean {
  if (rollup.raw) return false
  // On a zone's wall clock, only tiers whose buckets the zone's offsets and changes align with.
  if (rollup.zone !== undefined && (zoneAlignmentMs === undefined || zoneAlignmentMs % tier.ms !== 0)) return false
  if (rollup.fixedMs === null) return true
  return rollup.fixedMs % tier.ms === 0
}

const floorTo = (at: number, ms: number): number => Math.floor(at / ms) * ms
const ceilTo = (at: number, ms: number): number => Math.ceil(at / ms) * ms

/**
 * Splits [from, until) so that the aligned middle comes from the coarsest tier that serves the
 * rollup and the unaligned edges from finer tiers, down to raw rows. Tiers are coarsest first.
 */
export function planSegments (rollup: Rollup, from: Date, until: Date, tiers: readonly Tier[], zoneAlignmentMs?: number): Segment[] {
  if (from >= until) return []
  const usable = tiers.filter((tier) => tierServes(tier, rollup, zoneAlignmentMs))
  const split = (start: number, end: number, index: number): Segment[] => {
    if (start >= end) return []
    const tier = usable[index]
    if (tier === undefined) return [{ source: 'raw', from: new Date(start), until: new Date(end) }]
    const alignedStart = ceilTo(start, tier.ms)
    const alignedEnd = floorTo(end, tier.ms)
    if (alignedStart >= alignedEnd) return split(start, end, index + 1)
    return [
      ...split(start, alignedStart, index + 1),
      { source: tier, from: new Date(alignedStart), until: new Date(alignedEnd) },
      ...split(alignedEnd, end, index + 1)
    ]
  }
  return split(from.getTime(), until.getTime(), 0)
}
