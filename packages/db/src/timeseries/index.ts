export { TIERS, engineName, postgresRunner, runPipeline, compareReadings, pgArrayLiteral, asTextParams, pgDate, pgDateOrNull, type EngineName, type ReadingRow, type Runner, type Statement, type Tier, type TimeSeriesEngine } from './engine.js'
export { nativeEngine } from './native.js'
export { timescaleEngine } from './timescale.js'
export { binaryReadings, ensureComponents, KnownComponents, READINGS_COPY_TARGET, writeReadings, type WriteFrame, type WriteResult } from './writes.js'
export { openReadingsWriter, ReadingsWriter, type WriterOptions } from './group-commit.js'
export { tierStates, tierStatesIn, tierBoundsText, rawStates, rawPairs, readingsExtent, BucketStates, type BucketState, type StateQuery, type TierPiece } from './reads.js'
export { type DeviceSensor, rawPairsOfDevices, tierStatesOfDevices, tierValuesOfDevices, type WindowValues } from './area-reads.js'
export { aggregateByBucket, addValue, mergeInto, mergeStates, stateOf, type AggregateRow, type AggregateState } from './states.js'

import { engineName, type Runner, type TimeSeriesEngine } from './engine.js'
import { nativeEngine } from './native.js'
import { timescaleEngine } from './timescale.js'

/** The engine the database was migrated with. */
export async function loadEngine (runner: Runner): Promise<TimeSeriesEngine> {
  return (await engineName(runner)) === 'timescale' ? timescaleEngine() : nativeEngine()
}
export { dayOffsetTier, dayOffsetTiers, fillDayOffsetsOf, isTierableOffset, registerDayOffsets } from './day-offsets.js'
export { boundedRunner, historyRunner } from './history-runner.js'
export { bucketsPerDay, MAX_NTH_READING, nthReadingTime } from './estimates.js'
