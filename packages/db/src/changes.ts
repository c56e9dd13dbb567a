import { sql as drizzleSql } from 'drizzle-orm'
import type { Executor, Handle, Sql } from './client.js'

/**
 * The change feed: one PostgreSQL channel that every process LISTENs on, carrying `{ topic,
 * payload }`. Writers send with `notifyChange` inside their transaction, so PostgreSQL delivers
 * the notification when (and only when) it commits. Readers keep caches and drop them on changes.
 *
 * What it does not promise: NOTIFY reaches other processes asynchronously, some time after the
 * writer's COMMIT returned, and nothing at all arrives while a listening connection is down. So:
 * - every subscriber is told to `reset` (drop everything) each time the LISTEN is (re)established,
 *   because notifications sent while it was down are lost for good;
 * - a cache that must never answer older than a write that returned to anyone needs its own
 *   read barrier as well (the credential cache checks the auth generation row; see
 *   domain/src/auth/credential-cache.ts).
 */
// Also named in migration 0006, whose trigger sends the reference data's changes.
export const CHANGES_CHANNEL = 'esp_changes'

/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more. */
const MAX_PAYLOAD = 7900

export type ChangePayload = string | number | boolean | null | ChangePayload[] | { [key: string]: ChangePayload }

/** Sends a change on `topic`; inside a transaction it is delivered on commit and dropped on rollback. */
export async function notifyChange (tx: Pick<Executor, 'execute'>, topic: string, payload: ChangePayload = null): Promise<void> {
  const text = JSON.stringify({ topic, payload })
  // Too big to send: an empty payload tells subscribers "something on this topic changed".
  const sent = Buffer.byteLength(text) < MAX_PAYLOAD ? text : JSON.stringify({ topic, payload: null })
  await tx.execute(drizzleSql`select pg_notify(${CHANGES_CHANNEL}, ${sent})`)
}

export interface ChangeSubscriber {
  /** a change on the subscribed topic, after its transaction committed (payload null: anything may have changed) */
  change: (payload: ChangePayload) => void
  /** changes may have been missed (the listening connection was (re)established): drop everything cached */
  reset: () => void
}

/**
 * One per process. postgres.js keeps the LISTEN on a dedicated connection and, when that
 * connection drops, reconnects and LISTENs again, calling `onlisten` each time: that is where
 * every subscriber is reset.
 */
export class ChangeFeed {
  private readonly topics = new Map<string, Set<ChangeSubscriber>>()
  private listening: Promise<{ unlisten: () => Promise<void> }> | undefined
  /** how many times the LISTEN was (re)established: each one reset every subscriber */
  resets = 0

  private readonly sql: Sql

  constructor (database: Pick<Handle, 'sql'>, private readonly onError: (err: unknown) => void = () => {}) {
    this.sql = database.sql
  }

  /** Adds a subscriber; the returned function removes it. */
  subscribe (topic: string, subscriber: ChangeSubscriber): () => void {
    let set = this.topics.get(topic)
    if (set === undefined) this.topics.set(topic, set = new Set())
    set.add(subscriber)
    return () => { set.delete(subscriber) }
  }

  /** Resolves once the channel is listened to (and every subscriber was reset). */
  async start (): Promise<void> {
    this.listening ??= this.sql.listen(CHANGES_CHANNEL, (text) => { this.dispatch(text) }, () => { this.resetAll() })
      .then((listener) => ({ unlisten: async () => { await listener.unlisten() } }))
    await this.listening
  }

  async close (): Promise<void> {
    const listening = this.listening
    this.listening = undefined
    if (listening !== undefined) await (await listening).unlisten().catch(this.onError)
  }

  private dispatch (text: string): void {
    let message: { topic?: unknown, payload?: ChangePayload }
    try {
      message = JSON.parse(text) as typeof message
    } catch (err) {
      this.onError(err)
      return
    }
    if (typeof message.topic !== 'string') return
    for (const subscriber of this.topics.get(message.topic) ?? []) {
      try {
        subscriber.change(message.payload ?? null)
      } catch (err) {
        // A broken subscriber cannot be trusted with its cache any more.
        this.onError(err)
        this.safeReset(subscriber)
      }
    }
  }

  private resetAll (): void {
    this.resets++
    for (const set of this.topics.values()) for (const subscriber of set) this.safeReset(subscriber)
  }

  private safeReset (subscriber: ChangeSubscriber): void {
    try {
      subscriber.reset()
    } catch (err) {
      this.onError(err)
    }
  }
}
