/*
 * What a batch left out, in a file of its own: the ingest path fills it and the device's ingest
 * status (devices/device-messages.ts) keeps it, and neither may import the other back.
 */

/** A sensor id, or a kit or default key, as posted. */
export type SensorRef = number | string

/**
 * Values left out because their sensor is not known (not in the catalogue, or a key neither the
 * kit nor any sensor has), while the rest of their batch is stored: kits gain sensors through
 * firmware updates before the catalogue does (clients.md §1.3.1). Bounded: the count is exact,
 * the distinct sensors and the places are the first MAX_PROBLEMS.
 */
export interface Skipped {
  count: number
  sensors: Set<SensorRef>
  items: Array<{ path: string, sensor: SensorRef }>
}

export const noneSkipped = (): Skipped => ({ count: 0, sensors: new Set(), items: [] })

/** The answer's and the import's `skipped` (contract: POST readings). */
export interface SkippedView { count: number, unknown_sensors: SensorRef[], items: Array<{ path: string, sensor: SensorRef }> }

export const skippedView = (skipped: Skipped): SkippedView => ({ count: skipped.count, unknown_sensors: [...skipped.sensors], items: skipped.items })
