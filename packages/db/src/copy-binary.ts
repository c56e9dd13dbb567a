/**
 * PostgreSQL's binary COPY format (https://www.postgresql.org/docs/current/sql-copy.html#SQL-COPY-BINARY-FORMAT),
 * as the write path encodes readings and the export decodes them.
 */

/** The 11-byte signature every binary COPY stream starts with. */
export const COPY_BINARY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')

/** A whole header: the signature, no flags, no header extension. */
export const COPY_BINARY_HEADER = Buffer.concat([COPY_BINARY_SIGNATURE, Buffer.alloc(8)])

/** Binary timestamps count microseconds from 2000-01-01 UTC; this is that instant in epoch ms. */
export const PG_EPOCH_MS = 946_684_800_000

/** An int64 travels as two 32-bit halves, high * TWO_32 + low, so that no BigInt is made per row. */
export const TWO_32 = 4_294_967_296

/** The binary timestamp (int64 microseconds since 2000) at `offset` of `view`, in epoch ms. */
export const timestampMsAt = (view: DataView, offset: number): number =>
  Math.floor((view.getInt32(offset) * TWO_32 + view.getUint32(offset + 4)) / 1000) + PG_EPOCH_MS
