// JSON's nesting judged before JSON.parse, whose cost grows with it (a 5 MB body of `[` cost over
// a second of CPU): the one rule for every JSON the platform reads, HTTP bodies and MQTT payloads.

/**
 * The deepest JSON body the platform reads. The deepest thing a route keeps is free JSON (a
 * device's `meta`, at most 64 levels: domain/src/validation/free-json.ts) two objects down
 * (`postprocessing_attributes.meta`); the spare levels keep that check's own 422, which names the
 * field. A deeper body could only be refused later, after a JSON.parse whose cost grows with it.
 */
export const MAX_BODY_DEPTH = 72

// Bytes, not characters: UTF-8 continuation bytes are never ASCII, so no multi-byte character
// can pass for a quote or a bracket.
const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

/**
 * Whether a JSON text opens more than `max` arrays or objects at once, by one pass over its bytes
 * that stops at the first level too many. Malformed text is JSON.parse's to refuse: up to its
 * first error a text is a valid prefix, whose depth this counts exactly, so what passes here
 * costs JSON.parse no more than a body `max` levels deep.
 */
export function nestedDeeperThan (bytes: Uint8Array, max: number): boolean {
  let depth = 0
  const length = bytes.length
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]
    if (byte === QUOTE) {
      for (i++; i < length; i++) {
        const inner = bytes[i]
        if (inner === BACKSLASH) i++
        else if (inner === QUOTE) break
      }
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
}
