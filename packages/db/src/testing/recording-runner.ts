import type { Runner, Statement } from '../timeseries/engine.js'

/**
 * A Runner that runs everything on `runner` and logs each step: a statement by its first three
 * words (`insert into readings`), a COPY as `copy <table>`, a pipeline as its statements. Tests
 * read which path a write took, and `trips` counts the round trips it waited for.
 */
export function recordingRunner (runner: Runner): { runner: Runner, log: string[], trips: () => number } {
  const log: string[] = []
  let trips = 0
  const words = (text: string): string => text.trim().split(/\s+/).slice(0, 3).join(' ')
  return {
    log,
    trips: () => trips,
    runner: {
      query: async (text, params) => { trips++; log.push(words(text)); return await runner.query(text, params) },
      copyOutBinary: async (query) => { trips++; log.push(`copy (${words(query)}`); return await runner.copyOutBinary(query) },
      ...(runner.pipeline === undefined
        ? {}
        : { pipeline: async (statements: readonly Statement[]) => { trips++; log.push(...statements.map((s) => words(s.text))); return await (runner.pipeline?.(statements) ?? []) } }),
      ...(runner.copyBinary === undefined
        ? {}
        : {
            // The COPY's start waits for an answer, then its data for another.
            copyBinary: async (target: string, data: Uint8Array, before: readonly Statement[] = []) => {
              trips += 2
              log.push(...before.map((s) => words(s.text)), `copy ${target.split(' ')[0] ?? ''}`)
              await runner.copyBinary?.(target, data, before)
            }
          })
    }
  }
}

/** The steps of a write's raw insert in such a log (the tiers' are `insert into readings_hourly`). */
export const rawInsertSteps = (log: readonly string[]): string[] =>
  log.filter((step) => step === 'copy readings' || step.startsWith('rollback') || step === 'insert into readings')
