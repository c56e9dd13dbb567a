import type { Runner } from '../timeseries/engine.js'

/**
 * A Runner that runs everything on `runner` and logs each step: a statement by its first three
 * words (`insert into readings`), a COPY as `copy <table>`. Tests read which path a write took.
 */
export function recordingRunner (runner: Runner): { runner: Runner, log: string[] } {
  const log: string[] = []
  return {
    log,
    runner: {
      query: async (text, params) => { log.push(text.trim().split(/\s+/).slice(0, 3).join(' ')); return await runner.query(text, params) },
      ...(runner.copyBinary === undefined
        ? {}
        : { copyBinary: async (target: string, data: Uint8Array) => { log.push(`copy ${target.split(' ')[0] ?? ''}`); await runner.copyBinary?.(target, data) } })
    }
  }
}

/** The steps of a write's raw insert in such a log (the tiers' are `insert into readings_hourly`). */
export const rawInsertSteps = (log: readonly string[]): string[] =>
  log.filter((step) => step === 'copy readings' || step.startsWith('rollback') || step === 'insert into readings')
