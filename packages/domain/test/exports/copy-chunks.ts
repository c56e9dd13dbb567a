import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import fc from 'fast-check'

/** Instants of every kind: anywhere in 1971-2099, whole minutes as devices post, and times either side of PostgreSQL's 2000 epoch. */
export const anyInstant = fc.oneof(
  fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2099, 0, 1) }),
  fc.integer({ min: 0, max: 60_000_000 }).map((m) => Date.UTC(1990, 0, 1) + m * 60_000),
  fc.integer({ min: -5_000, max: 5_000 }).map((d) => Date.UTC(2000, 0, 1) + d)
)

/** Values of every kind: every finite double, steps of 0.01 as sensors report them, and null. */
export const anyValue = fc.option(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -1000, max: 1000 }).map((v) => v / 100)), { nil: null })

/**
 * Feeds a binary COPY's `bytes` to `transform` in pieces cut at `cuts` (offsets, in any order), as
 * a socket's chunks may end anywhere, and returns what it wrote.
 */
export async function feedInPieces (bytes: Buffer, cuts: readonly number[], transform: NodeJS.ReadWriteStream): Promise<Buffer> {
  const pieces: Buffer[] = []
  let from = 0
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    pieces.push(bytes.subarray(from, cut))
    from = cut
  }
  pieces.push(bytes.subarray(from))
  return await buffer(Readable.from(pieces).pipe(transform))
}
