/**
 * The firmware's "light" readings format on `device/sck/<token>/readings/raw` (behaviour.md §9.3,
 * clients.md §1.3.1), e.g. `{t:2026-03-02T10:21:00Z,10:87,55:23.41}`. It is not JSON.
 *
 *   message   = '{' SP* ( pair SP* [ ',' SP* ] )* '}'
 *   pair      = 't' SP* ':' timestamp | key SP* ':' SP* value
 *   timestamp = DDDD '-' DD '-' DD 'T' DD ':' DD ':' DD 'Z'
 *   key       = [-0-9]+
 *   value     = [-0-9]+ [ '.' [-0-9]+ ] | 'null'
 *
 * Like the reference PEG grammar, nothing is required between pairs: the greedy value and key
 * tokens make adjacent pairs unambiguous, so `{1:2 3:4}` and even `{t:...Z1:2}` are accepted.
 */

export interface RawSensorValue {
  id: string
  value: string
}

export interface RawPayload {
  /** the last `t` as sent, or null when there was none */
  recordedAt: string | null
  sensors: RawSensorValue[]
}

/** The firmware's MQTT buffer (MQTT_BUFF_SIZE); devices never come close (clients.md §1.1). */
export const MAX_RAW_PAYLOAD_BYTES = 4096

export class RawPayloadError extends Error {
  /** offset in the payload after non-ASCII bytes and outer whitespace were removed */
  readonly position: number | null

  constructor (message: string, position: number | null = null) {
    super(position === null ? message : `${message} at position ${position}`)
    this.name = 'RawPayloadError'
    this.position = position
  }
}

const DIGITS = /[-0-9]+/y
const TIMESTAMP = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/y
// Ruby's strip, which the reference applies, also removes trailing NULs that C buffers leave.
const OUTER_WHITESPACE = /^[\t\n\v\f\r ]+|[\t\n\v\f\r \0]+$/g

function describe (char: string | undefined): string {
  return char === undefined ? 'the end of the payload' : JSON.stringify(char)
}

class Parser {
  private pos = 0
  private recordedAt: string | null = null
  private readonly sensors: RawSensorValue[] = []

  constructor (private readonly text: string) {}

  parse (): RawPayload {
    this.expect('{', "the payload must start with '{'")
    this.spaces()
    while (this.peek() !== '}') {
      if (this.peek() === undefined) this.fail("missing closing '}'")
      this.pair()
      this.spaces()
      if (this.peek() === ',') {
        this.pos++
        this.spaces()
      }
    }
    this.pos++
    if (this.pos < this.text.length) this.fail(`unexpected ${describe(this.peek())} after the closing '}'`)
    return { recordedAt: this.recordedAt, sensors: this.sensors }
  }

  private pair (): void {
    const char = this.peek()
    if (char === 't') {
      this.pos++
      this.spaces()
      this.expect(':', "expected ':' after 't'")
      this.recordedAt = this.token(TIMESTAMP, 'expected a timestamp YYYY-MM-DDTHH:MM:SSZ')
      return
    }
    if (char === undefined || !/[-0-9]/.test(char)) {
      this.fail(`expected a pair ('t:<time>' or '<sensor id>:<value>') but found ${describe(char)}`)
    }
    const id = this.token(DIGITS, 'expected a sensor id')
    this.spaces()
    this.expect(':', `expected ':' after the sensor id ${id}`)
    this.spaces()
    if (this.text.startsWith('null', this.pos)) {
      // The firmware and the reference drop null readings instead of storing them.
      this.pos += 4
      return
    }
    let value = this.token(DIGITS, `expected a number or null for sensor ${id}`)
    if (this.peek() === '.' && /[-0-9]/.test(this.text.charAt(this.pos + 1))) {
      this.pos++
      value += `.${this.token(DIGITS, 'expected digits after the decimal point')}`
    }
    this.sensors.push({ id, value })
  }

  private peek (): string | undefined {
    return this.text[this.pos]
  }

  private spaces (): void {
    while (this.text[this.pos] === ' ') this.pos++
  }

  private expect (char: string, message: string): void {
    if (this.peek() !== char) this.fail(`${message} but found ${describe(this.peek())}`)
    this.pos++
  }

  private token (pattern: RegExp, message: string): string {
    pattern.lastIndex = this.pos
    const match = pattern.exec(this.text)
    if (match === null) this.fail(`${message} but found ${describe(this.peek())}`)
    this.pos += match[0].length
    return match[0]
  }

  private fail (message: string): never {
    throw new RawPayloadError(message, this.pos)
  }
}

/** Parses a raw readings payload; throws RawPayloadError, and nothing else, for malformed input. */
export function parseRawPayload (payload: Buffer | string): RawPayload {
  const bytes = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload
  if (bytes.length > MAX_RAW_PAYLOAD_BYTES) {
    throw new RawPayloadError(`the payload is ${bytes.length} bytes, over the limit of ${MAX_RAW_PAYLOAD_BYTES}`)
  }
  // The reference converts to US-ASCII and silently drops every other byte (behaviour.md §9.2),
  // so a stray byte must not fail a message it would have stored.
  const ascii = Buffer.from(bytes.filter((byte) => byte < 0x80)).toString('latin1')
  return new Parser(ascii.replace(OUTER_WHITESPACE, '')).parse()
}
