import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs'

/**
 * An append-only log file that can neither fill its disk nor stop its writer: past half of
 * `maxBytes` it becomes `<file>.1` (replacing the older one) and a new file starts, so at most
 * `maxBytes` are kept, the newest lines. A write that fails (the disk is full) is dropped and
 * counted, and the next one that succeeds says how much was lost. Writes are synchronous: the
 * server logs little (start, stop, errors), and an ordered file needs no queue that way.
 */
export class RotatingLog {
  private fd: number | undefined
  private size = 0
  private lost = 0
  private readonly rotateAt: number

  constructor (readonly file: string, maxBytes: number) {
    this.rotateAt = Math.max(4096, Math.floor(maxBytes / 2))
  }

  write (text: string): void {
    const lostNote = this.lost > 0 ? `[${this.lost} bytes of this log were lost: the disk was full or the file could not be written]\n` : ''
    const bytes = Buffer.from(lostNote + text, 'utf8')
    try {
      this.fd ??= this.open()
      if (this.size > 0 && this.size + bytes.length > this.rotateAt) {
        this.rotate()
        this.fd = this.open()
      }
      writeSync(this.fd, bytes)
      this.size += bytes.length
      this.lost = 0
    } catch {
      this.lost += Buffer.byteLength(text)
    }
  }

  close (): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private open (): number {
    const fd = openSync(this.file, 'a', 0o600)
    this.size = fstatSync(fd).size
    return fd
  }

  private rotate (): void {
    this.close()
    renameSync(this.file, `${this.file}.1`)
  }
}
