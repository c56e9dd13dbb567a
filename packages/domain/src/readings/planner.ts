import type { Tier } from '@esp/db'
import { bucketStartMs, nextBucket, type Rollup } from './rollup.js'

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

const DAY_MS = 86_400_000
/** Units whose buckets begin at midnights: on a wall clock, whole local days. */
const DAY_UNITS = new Set(['d', 'w', 'M', 'y'])

/**
 * On a zone's wall clock, for rollups of whole local days (d, w, M, y): a local day that keeps one
 * offset from midnight to midnight is one row of the daily tier shifted by that offset, when the
 * deployment keeps one (`dayTiers`, by offset in ms). Runs of such days make segments of that
 * tier (at offset 0, the UTC daily tier); the rest (the days the clocks change on, parts of days
 * at the ends, offsets without a tier) is planned as planSegments plans it.
 */
export function planZoneSegments (rollup: Rollup, from: Date, until: Date, tiers: readonly Tier[], zoneAlignmentMs: number | undefined, dayTiers: ReadonlyMap<number, Tier>): Segment[] {
  const zone = rollup.zone
  if (zone === undefined || rollup.raw || !DAY_UNITS.has(rollup.unit)) return planSegments(rollup, from, until, tiers, zoneAlignmentMs)
  // A day at offset 0 is a UTC day.
  const utcDays = tiers.find((tier) => tier.ms === DAY_MS && tier.offsetMinutes === undefined)
  const tierAt = (offset: number): Tier | undefined => offset === 0 ? utcDays : dayTiers.get(offset)
  const day: Rollup = { text: '1d', value: 1, unit: 'd', raw: false, fixedMs: DAY_MS, zone }
  const end = until.getTime()
  const segments: Segment[] = []
  let planned = from.getTime()
  let run: { tier: Tier, from: number, until: number } | null = null
  const closeRun = (): void => {
    if (run === null) return
    segments.push(...planSegments(rollup, new Date(planned), new Date(run.from), tiers, zoneAlignmentMs), { source: run.tier, from: new Date(run.from), until: new Date(run.until) })
    planned = run.until
    run = null
  }
  let start = bucketStartMs(planned, day)
  if (start < planned) start = nextBucket(new Date(start), day).getTime()
  while (start < end) {
    const next = nextBucket(new Date(start), day).getTime()
    if (next > end) break
    const offset = zone.offsetMs(start)
    const tier = next - start === DAY_MS && zone.offsetMs(next - 1) === offset ? tierAt(offset) : undefined
    if (tier !== undefined && run !== null && run.tier === tier && run.until === start) {
      run.until = next
    } else {
      closeRun()
      if (tier !== undefined) run = { tier, from: start, until: next }
    }
    start = next
  }
  closeRun()
  return [...segments, ...planSegments(rollup, new Date(planned), until, tiers, zoneAlignmentMs)]
}
