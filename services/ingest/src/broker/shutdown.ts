import type { IncomingMessage } from 'node:http'
import type { Aedes, Client, Connection } from 'aedes'

/** How long a closing connection waits for the device to close its side once its PUBACKs are out. */
export const LINGER_MS = 500

/** aedes' Client stops reading its socket when paused (lib/client.js); its typings omit it. */
type PausableClient = Client & { pause?: () => void }

export interface BrokerShutdown {
  /** hands a new connection (TCP or WebSocket) to the broker; refused once the stop has begun */
  handle: (conn: Connection, req?: IncomingMessage) => void
  /**
   * The graceful stop (issue 21): no new connections and no further reads from open ones; every
   * PUBLISH already handed to the broker is stored and acknowledged; then each connection is
   * closed after its PUBACKs, and the broker.
   */
  stop: () => Promise<void>
}

/**
 * Wraps the broker's `authorizePublish` (installed by access.ts, which stores the message and
 * calls back only after the commit) to count what is in flight. aedes writes the PUBACK in that
 * callback, synchronously, so when the count is back to zero every PUBACK is on its socket.
 * `drain` sends what the message batcher holds now instead of after its few milliseconds.
 */
export function brokerShutdown (broker: Aedes, options: { drain: () => Promise<void>, lingerMs?: number }): BrokerShutdown {
  const lingerMs = options.lingerMs ?? LINGER_MS
  const connections = new Set<PausableClient>()
  let stopping = false
  let inFlight = 0
  let settled: (() => void) | undefined

  const authorize = broker.authorizePublish
  broker.authorizePublish = (client, packet, callback) => {
    // The platform's own publishes (live readings) come without a client and store nothing.
    if (client === null) { authorize(client, packet, callback); return }
    inFlight++
    authorize(client, packet, (err) => {
      try {
        callback(err)
      } finally {
        if (--inFlight === 0) settled?.()
      }
    })
  }

  const handle = (conn: Connection, req?: IncomingMessage): void => {
    if (stopping) { conn.destroy(); return }
    const client: PausableClient = broker.handle(conn, req)
    connections.add(client)
    conn.once('close', () => { connections.delete(client) })
  }

  const allSettled = async (): Promise<void> => {
    if (inFlight === 0) return
    await new Promise<void>((resolve) => { settled = resolve })
    // A client still authenticating at the stop hands over what it sent before, once connected.
    await allSettled()
  }

  const stop = async (): Promise<void> => {
    stopping = true
    // aedes hands a socket read to its parser all at once, and the parser calls authorizePublish
    // for each PUBLISH in it synchronously: once paused, a client's in-flight PUBLISHes are exactly
    // those counted, and what it sends from now on stays unread (never stored, never acknowledged).
    for (const client of connections) {
      if (typeof client.pause !== 'function') throw new Error('aedes Client.pause is missing: the broker cannot stop reading')
      client.pause()
    }
    await options.drain()
    await allSettled()
    await Promise.all([...connections].map(async (client) => { await closeAfterWrites(client.conn, lingerMs) }))
    await new Promise<void>((resolve) => { broker.close(() => { resolve() }) })
  }

  return { handle, stop }
}

/**
 * Ends a connection after what was written to it (its PUBACKs), then waits up to `lingerMs` for the
 * device to close its side. Destroying it at once would lose queued writes, and closing a TCP
 * socket that holds unread data sends a reset, which can make the device's stack drop PUBACKs it
 * had received but not yet read; so what the device still sends is read and dropped meanwhile.
 */
async function closeAfterWrites (conn: Connection, lingerMs: number): Promise<void> {
  if (conn.destroyed) return
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => { conn.destroy(); resolve() }, lingerMs)
    conn.once('close', () => { clearTimeout(timer); resolve() })
    conn.removeAllListeners('readable')
    conn.on('data', () => {})
    conn.resume()
    conn.end()
  })
}
