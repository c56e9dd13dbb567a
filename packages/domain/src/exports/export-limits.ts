import { addressKey } from '../auth/throttle.js'
import { isPrivileged, type Viewer } from '../auth/viewer.js'
import { errors } from '../errors.js'

/** How many streamed exports may run at once: per process, and per caller by who is calling. */
export interface ExportSlotLimits {
  /** per process: each export holds a database connection of its own */
  maxConcurrent: number
  /** per anonymous address (IPv6 by its /64) */
  perAnonymous: number
  /** per citizen */
  perCitizen: number
  /** per researcher or admin */
  perResearcher: number
}

/** the Retry-After of a caller over its share: its own exports must end first, which we cannot foresee */
export const EXPORT_RETRY_AFTER_SECONDS = 30

/** A slot taken: given back in two steps, each once however often it is called. */
export interface ExportSlot {
  /**
   * The caller's share back: its download is over, though the export's connection may still be
   * closing. A client that asks again at once (a script's next download) is not refused for it.
   */
  leaveCaller: () => void
  /** The slot back (and the caller's share, if not yet): the export's connection is closed. */
  release: () => void
}

/**
 * The slots of the streamed exports of one api process (issue 33). A caller over its share is a
 * 429, so that one address or account opening exports it never reads cannot hold every slot; the
 * process's limit (503) still bounds the connections all of them hold.
 */
export class ExportSlots {
  private running = 0
  private readonly byCaller = new Map<string, number>()

  constructor (private readonly limits: ExportSlotLimits) {}

  /** Takes a slot for the caller, or throws 429 (over the caller's share) or 503 (the process's). */
  take (viewer: Viewer | null, ip: string): ExportSlot {
    const caller = viewer === null ? `address:${addressKey(ip)}` : `user:${viewer.id}`
    const share = viewer === null ? this.limits.perAnonymous : isPrivileged(viewer) ? this.limits.perResearcher : this.limits.perCitizen
    const held = this.byCaller.get(caller) ?? 0
    if (held >= share) throw errors.tooManyRequests(EXPORT_RETRY_AFTER_SECONDS)
    if (this.running >= this.limits.maxConcurrent) throw errors.serviceUnavailable('Too many exports are running; try again in a minute')
    this.running++
    this.byCaller.set(caller, held + 1)
    let callerLeft = false
    let released = false
    const leaveCaller = (): void => {
      if (callerLeft) return
      callerLeft = true
      const left = (this.byCaller.get(caller) ?? 1) - 1
      if (left === 0) this.byCaller.delete(caller)
      else this.byCaller.set(caller, left)
    }
    return {
      leaveCaller,
      release: () => {
        leaveCaller()
        if (released) return
        released = true
        this.running--
      }
    }
  }

  /** exports running now */
  get size (): number {
    return this.running
  }
}

/** What the watch needs of the client's socket (a `net.Socket`). */
export interface ExportSocket {
  /** bytes handed to the socket, those still waiting in its buffer included */
  readonly bytesWritten: number
  /** bytes not yet taken by the operating system (the write in flight included) */
  readonly writableLength: number
}

export interface ExportTimeouts {
  /** the longest the client may take no bytes while some wait for it */
  idleMs: number
  /** the longest an export may run, however it reads */
  maxMs: number
}

export type ExportStopReason = 'idle' | 'duration'

/**
 * Calls `stop` once when the client has accepted no bytes for `idleMs` while bytes wait in its
 * socket (it stopped reading: the kernel's buffers are full and the socket's `drain` never comes),
 * or when the export has run `maxMs`. Bytes accepted are what was handed to the socket less what
 * still waits in it. An export with nothing waiting is never idle: a slow scan is the database's
 * time, not the client's. A socket that is not a `net.Socket` (an injected request) gets only the
 * duration cap. Returns the function that ends the watch.
 */
export function watchExport (socket: ExportSocket | null, timeouts: ExportTimeouts, stop: (reason: ExportStopReason) => void): () => void {
  let done = false
  const finish = (reason: ExportStopReason): void => {
    if (done) return
    end()
    stop(reason)
  }
  const cap = setTimeout(() => { finish('duration') }, timeouts.maxMs)
  cap.unref()
  let idle: NodeJS.Timeout | undefined
  if (socket !== null && typeof socket.bytesWritten === 'number') {
    let accepted = socket.bytesWritten - socket.writableLength
    let lastProgress = performance.now()
    // A few looks within the idle time: it fires at most a quarter of it late.
    idle = setInterval(() => {
      const now = performance.now()
      const nowAccepted = socket.bytesWritten - socket.writableLength
      if (nowAccepted !== accepted || socket.writableLength === 0) {
        accepted = nowAccepted
        lastProgress = now
      } else if (now - lastProgress >= timeouts.idleMs) {
        finish('idle')
      }
    }, Math.max(10, Math.min(1000, Math.floor(timeouts.idleMs / 4))))
    idle.unref()
  }
  function end (): void {
    done = true
    clearTimeout(cap)
    if (idle !== undefined) clearInterval(idle)
  }
  return () => { if (!done) end() }
}
