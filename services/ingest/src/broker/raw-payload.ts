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

const SPACE = 0x20
const MINUS = 0x2d
const DOT = 0x2e
const COLON = 0x3a
const COMMA = 0x2c
const CLOSE = 0x7d

const isDigit = (code: number): boolean => code >= 0x30 && code <= 0x39
/** The key and value tokens of the grammar: digits and minus signs. */
const isKeyChar = (code: number): boolean => code === MINUS || isDigit(code)
/** Ruby's strip, which the reference applies; at the end also the NULs that C buffers leave. */
const isLeadingSpace = (code: number): boolean => code === SPACE || (code >= 0x09 && code <= 0x0d)
const isTrailingSpace = (code: number): boolean => isLeadingSpace(code) || code === 0

/** `DDDD-DD-DDTDD:DD:DDZ` at `at`. */
function isTimestampAt (text: string, at: number): boolean {
  if (at + 20 > text.length) return false
  for (let i = 0; i < 20; i++) {
    const code = text.charCodeAt(at + i)
    const ok = i === 4 || i === 7 ? code === MINUS : i === 10 ? code === 0x54 : i === 13 || i === 16 ? code === COLON : i === 19 ? code === 0x5a : isDigit(code)
    if (!ok) return false
  }
  return true
}

function describe (char: string | undefined): string {
  return char === undefined ? 'the end of the payload' : JSON.stringify(char)
}

/**
 * A scanner over character codes: every kit message passes through here, and sticky regexes and
 * one-character strings cost more than the rest of its way to the database.
 */
class Parser {
  private pos = 0
  private recordedAt: string | null = null
  private readonly sensors: RawSensorValue[] = []

  constructor (private readonly text: string) {}

  parse (): RawPayload {
    this.expect(0x7b, "the payload must start with '{'")
    this.spaces()
    while (this.code() !== CLOSE) {
      if (this.pos >= this.text.length) this.fail("missing closing '}'")
      this.pair()
      this.spaces()
      if (this.code() === COMMA) {
        this.pos++
        this.spaces()
      }
    }
    this.pos++
    if (this.pos < this.text.length) this.fail(`unexpected ${describe(this.peek())} after the closing '}'`)
    return { recordedAt: this.recordedAt, sensors: this.sensors }
  }

  private pair (): void {
    const code = this.code()
    if (code === 0x74) {
      this.pos++
      this.spaces()
      this.expect(COLON, "expected ':' after 't'")
      if (!isTimestampAt(this.text, this.pos)) this.fail(`expected a timestamp YYYY-MM-DDTHH:MM:SSZ but found ${describe(this.peek())}`)
      this.recordedAt = this.text.slice(this.pos, this.pos + 20)
      this.pos += 20
      return
    }
    if (!isKeyChar(code)) this.fail(`expected a pair ('t:<time>' or '<sensor id>:<value>') but found ${describe(this.peek())}`)
    const id = this.digits('expected a sensor id')
    this.spaces()
    this.expect(COLON, `expected ':' after the sensor id ${id}`)
    this.spaces()
    if (this.text.startsWith('null', this.pos)) {
      // The firmware and the reference drop null readings instead of storing them.
      this.pos += 4
      return
    }
    const start = this.pos
    this.digits(`expected a number or null for sensor ${id}`)
    if (this.code() === DOT && isKeyChar(this.text.charCodeAt(this.pos + 1))) {
      this.pos++
      this.digits('expected digits after the decimal point')
    }
    this.sensors.push({ id, value: this.text.slice(start, this.pos) })
  }

  private code (): number {
    return this.text.charCodeAt(this.pos)
  }

  private peek (): string | undefined {
    return this.text[this.pos]
  }

  private spaces (): void {
    while (this.text.charCodeAt(this.pos) === SPACE) this.pos++
  }

  private expect (code: number, message: string): void {
    if (this.code() !== code) this.fail(`${message} but found ${describe(this.peek())}`)
    this.pos++
  }

  /** A run of [-0-9], at least one. */
  private digits (message: string): string {
    const start = this.pos
    while (isKeyChar(this.text.charCodeAt(this.pos))) this.pos++
    if (this.pos === start) this.fail(`${message} but found ${describe(this.peek())}`)
    return this.text.slice(start, this.pos)
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
  let plain = true
  for (let i = 0; i < bytes.length && plain; i++) plain = (bytes[i] as number) < 0x80
  const ascii = (plain ? bytes : Buffer.from(bytes.filter((byte) => byte < 0x80))).toString('latin1')
  let from = 0
  let to = ascii.length
  while (from < to && isLeadingSpace(ascii.charCodeAt(from))) from++
  while (to > from && isTrailingSpace(ascii.charCodeAt(to - 1))) to--
  return new Parser(from === 0 && to === ascii.length ? ascii : ascii.slice(from, to)).parse()
}
