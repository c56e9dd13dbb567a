import type { Handle } from '../client.js'
import { concurrencyLimit } from '../concurrency.js'
import { postgresRunner, type Runner } from './engine.js'

/**
 * A Runner whose statements hold at most `limit` connections at once; the others wait their turn.
 * A pipeline's statements count one each: on a pool, postgres.js runs them side by side.
 */
export function boundedRunner (runner: Runner, limit: number): Runner {
  const inTurn = concurrencyLimit(limit).run
  const bounded: Runner = {
    query: async <T extends object>(text: string, params?: unknown[]) => await inTurn(async () => await runner.query<T>(text, params)),
    pipeline: async (statements) => await Promise.all(statements.map(async (s) => await inTurn(async () => await runner.query(s.text, s.params)))),
    copyOutBinary: async (query) => await inTurn(async () => await runner.copyOutBinary(query))
  }
  const copyBinary = runner.copyBinary
  if (copyBinary !== undefined) bounded.copyBinary = async (target, data, before) => { await inTurn(async () => { await copyBinary(target, data, before) }) }
  return bounded
}

/**
 * The readings history's Runner on a pool: its statements take at most half the pool's
 * connections, whatever the requests. One request over a zone's years fans out a statement per
 * sensor and tier run, and a few of them took the whole pool for a tenth of a second, while every
 * other request (a device page, a login) waited for a connection.
 */
export function historyRunner ({ sql }: Pick<Handle, 'sql'>): Runner {
  return boundedRunner(postgresRunner(sql), Math.max(1, Math.floor(sql.options.max / 2)))
}
