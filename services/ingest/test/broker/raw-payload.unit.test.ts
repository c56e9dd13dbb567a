import t from 'tap'
import fc from 'fast-check'
import { MAX_RAW_PAYLOAD_BYTES, parseRawPayload, RawPayloadError, type RawPayload } from '../../src/broker/raw-payload.js'

const sensors = (...pairs: [string, string][]) => pairs.map(([id, value]) => ({ id, value }))

t.test('E3: a full group from the firmware', async (t) => {
  const payload = '{t:2026-03-02T10:21:00Z,10:87,221:1,220:-67,14:312,55:23.41,56:48.72,53:51.83,58:101.04,113:12,112:412,89:5,87:7,88:9,165:1023,166:301,167:54,168:6,169:1,170:0}'
  t.same(parseRawPayload(payload), {
    recordedAt: '2026-03-02T10:21:00Z',
    sensors: sensors(['10', '87'], ['221', '1'], ['220', '-67'], ['14', '312'], ['55', '23.41'], ['56', '48.72'], ['53', '51.83'],
      ['58', '101.04'], ['113', '12'], ['112', '412'], ['89', '5'], ['87', '7'], ['88', '9'], ['165', '1023'], ['166', '301'],
      ['167', '54'], ['168', '6'], ['169', '1'], ['170', '0'])
  })
  t.same(parseRawPayload(Buffer.from(payload)), parseRawPayload(payload), 'a Buffer as MQTT delivers it')
})

t.test('E4: a backlog burst without a battery', async (t) => {
  t.same(parseRawPayload('{t:2026-03-01T22:14:00Z,10:-1,221:1,14:0,55:17.92,56:71.30,53:38.20,58:100.87,113:3,112:400}'), {
    recordedAt: '2026-03-01T22:14:00Z',
    sensors: sensors(['10', '-1'], ['221', '1'], ['14', '0'], ['55', '17.92'], ['56', '71.30'], ['53', '38.20'], ['58', '100.87'],
      ['113', '3'], ['112', '400'])
  })
  t.same(parseRawPayload('{t:2026-03-01T22:15:00Z,10:-1,221:1,14:0,55:17.88,56:71.41,53:37.95,58:100.87,113:3,112:400}').sensors.length, 9)
  t.same(parseRawPayload('{t:2026-03-01T22:16:00Z,10:-1,221:1,220:-71,14:0,55:17.85,56:71.52,53:39.10,58:100.86,113:4,112:403}'), {
    recordedAt: '2026-03-01T22:16:00Z',
    sensors: sensors(['10', '-1'], ['221', '1'], ['220', '-71'], ['14', '0'], ['55', '17.85'], ['56', '71.52'], ['53', '39.10'],
      ['58', '100.86'], ['113', '4'], ['112', '403'])
  })
})

t.test('E6: a third-party client, one sensor', async (t) => {
  t.same(parseRawPayload('{t:2026-03-02T10:25:13Z,91:123.45}'), { recordedAt: '2026-03-02T10:25:13Z', sensors: sensors(['91', '123.45']) })
})

t.test('the edge cases of the reference parser', async (t) => {
  const cases: [string, RawPayload][] = [
    ['{}', { recordedAt: null, sensors: [] }],
    ['{t:2024-09-25T13:19:38Z}', { recordedAt: '2024-09-25T13:19:38Z', sensors: [] }],
    ['{t:2024-09-25T13:19:38Z,1:2}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['1', '2']) }],
    ['{t:2024-09-25T13:19:38Z,2:-3}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['2', '-3']) }],
    ['{t:2024-09-25T13:19:38Z,10:3.12345}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['10', '3.12345']) }],
    ['{100:-2000.12345,t:2024-09-25T13:19:38Z,21:12345.23450}',
      { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['100', '-2000.12345'], ['21', '12345.23450']) }],
    ['{t:2024-09-25T13:19:38Z, 100 : -2000.12345}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['100', '-2000.12345']) }],
    ['{t:2024-09-25T13:19:38Z, 100 : -2000.12345, 21 : 12345.23450}',
      { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['100', '-2000.12345'], ['21', '12345.23450']) }],
    ['{  t:2024-09-25T13:19:38Z,100:-2000.12345,21:12345.23450  }',
      { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['100', '-2000.12345'], ['21', '12345.23450']) }],
    ['   {t:2024-09-25T13:19:38Z,100:-2000.12345}  ', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['100', '-2000.12345']) }],
    ['\r\n{t:2024-09-25T13:19:38Z}\n\0', { recordedAt: '2024-09-25T13:19:38Z', sensors: [] }],
    ['{t:2024-09-25T13:19:38Z,21:null}', { recordedAt: '2024-09-25T13:19:38Z', sensors: [] }],
    ['{t:2024-09-25T13:19:38Z,21:null,22:1}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['22', '1']) }],
    ['{21: null , 22:1}', { recordedAt: null, sensors: sensors(['22', '1']) }],
    ['{1:-}', { recordedAt: null, sensors: sensors(['1', '-']) }],
    ['{-5:3}', { recordedAt: null, sensors: sensors(['-5', '3']) }],
    ['{1-2:3--4.-5}', { recordedAt: null, sensors: sensors(['1-2', '3--4.-5']) }],
    ['{t :2024-09-25T13:19:38Z}', { recordedAt: '2024-09-25T13:19:38Z', sensors: [] }],
    ['{t:2024-09-25T13:19:38Z 1:2 3:4}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['1', '2'], ['3', '4']) }],
    ['{1:2,}', { recordedAt: null, sensors: sensors(['1', '2']) }],
    ['{1:2 , }', { recordedAt: null, sensors: sensors(['1', '2']) }],
    ['{ }', { recordedAt: null, sensors: [] }],
    ['{1:2,1:3,1:2}', { recordedAt: null, sensors: sensors(['1', '2'], ['1', '3'], ['1', '2']) }],
    ['{t:2024-01-01T00:00:00Z,1:2,t:2024-01-01T00:01:00Z}', { recordedAt: '2024-01-01T00:01:00Z', sensors: sensors(['1', '2']) }],
    ['{t:2024-09-25T13:19:38Z1:2}', { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['1', '2']) }],
    ['{1:null2:3}', { recordedAt: null, sensors: sensors(['2', '3']) }],
    ['{007:0010.500}', { recordedAt: null, sensors: sensors(['007', '0010.500']) }],
    ['{t:2024-99-99T99:99:99Z}', { recordedAt: '2024-99-99T99:99:99Z', sensors: [] }]
  ]
  for (const [payload, expected] of cases) t.same(parseRawPayload(payload), expected, JSON.stringify(payload))
})

t.test('non-ASCII bytes are dropped before parsing', async (t) => {
  const expected = { recordedAt: '2024-09-25T13:19:38Z', sensors: sensors(['100', '-2000.12345'], ['21', '12345.23450']) }
  t.same(parseRawPayload('{t:2024-09-25T13:19:38Z💣💣💣💣,100:-2000.12345,21:12345.23450}'), expected)
  t.same(parseRawPayload(Buffer.from('{t:2024-09-25T13:19:38Z💣,100:-2000.12345,21:12345.23450}')), expected)
  t.same(parseRawPayload(Buffer.from([0xff, 0x7b, 0x80, 0x31, 0x3a, 0xc3, 0x32, 0x7d, 0xfe])), { recordedAt: null, sensors: sensors(['1', '2']) },
    'bytes that are not UTF-8 either')
  t.same(parseRawPayload('\u00a0{1:2}\u00a0'), { recordedAt: null, sensors: sensors(['1', '2']) }, 'a no-break space is not ASCII')
  t.same(parseRawPayload('{1:2é3}'), { recordedAt: null, sensors: sensors(['1', '23']) }, 'removed bytes join their neighbours')
})

t.test('malformed payloads are a RawPayloadError saying what and where', async (t) => {
  const rejected: [string, number | null, RegExp][] = [
    ['{t:2024-09-25T13:19:38Z,\n100:1}', 24, /expected a pair .* but found "\\n" at position 24/],
    ['{\n  "data": []\n}', 1, /expected a pair/], // the multi-line docs/mqtt.md example
    ['{t:2024-09-25T13:19:38Z,\t100:1}', 24, /"\\t"/],
    ['{1:2\r\n}', 4, /position 4/],
    ['{1:1e5}', 4, /"e"/],
    ['{1:.5}', 3, /expected a number or null for sensor 1 but found "\."/],
    ['{1:1.2.3}', 6, /"\."/],
    ['{1:1.}', 4, /"\."/],
    ['{1:+1}', 3, /"\+"/],
    ['{t: 2024-09-25T13:19:38Z}', 3, /expected a timestamp YYYY-MM-DDTHH:MM:SSZ but found " "/],
    ['{t:2024-09-25T13:19:38.5Z}', 3, /expected a timestamp/],
    ['{t:2024-09-25T13:19:38+01:00}', 3, /expected a timestamp/],
    ['{t:2024-09-25 13:19:38Z}', 3, /expected a timestamp/],
    ['{t:2024-09-25T13:19:38z}', 3, /expected a timestamp/],
    ['{t:null}', 3, /expected a timestamp/],
    ['{t2024-09-25T13:19:38Z}', 2, /expected ':' after 't' but found "2"/],
    ['{temp:21}', 2, /expected ':' after 't' but found "e"/],
    ['{noise:21}', 1, /expected a pair/],
    ['{1:"2"}', 3, /expected a number or null/],
    ['{"1":2}', 1, /expected a pair/],
    ['{1:nul}', 3, /expected a number or null/],
    ['{1:NULL}', 3, /expected a number or null/],
    ['{1 2}', 3, /expected ':' after the sensor id 1 but found "2"/],
    ['{1:}', 3, /expected a number or null for sensor 1 but found "}"/],
    ['{:1}', 1, /expected a pair/],
    ['{1:2,,3:4}', 5, /expected a pair .* but found ","/],
    ['{,1:2}', 1, /found ","/],
    ['{,}', 1, /found ","/],
    ['1:2}', 0, /the payload must start with '\{' but found "1"/],
    ['{1:2', 4, /missing closing '\}' at position 4/],
    ['{1:2,', 5, /missing closing/],
    ['{', 1, /missing closing/],
    ['', 0, /must start with '\{' but found the end of the payload/],
    ['   ', 0, /must start with/],
    ['{1:2}}', 5, /unexpected "\}" after the closing '\}'/],
    ['{1:2} x', 5, /after the closing/],
    ['{1:2}{3:4}', 5, /after the closing/],
    ['[1:2]', 0, /must start with/],
    ['{"data":[{"recorded_at":"2019-11-05T08:00:00Z","sensors":[{"id":10,"value":87}]}]}', 1, /expected a pair/],
    ["ceci n'est pas un message", 0, /must start with/]
  ]
  for (const [payload, position, message] of rejected) {
    const error = t.throws(() => parseRawPayload(payload), JSON.stringify(payload)) as RawPayloadError
    t.type(error, RawPayloadError, JSON.stringify(payload))
    t.equal(error.name, 'RawPayloadError')
    t.equal(error.position, position, `position in ${JSON.stringify(payload)}`)
    t.match(error.message, message, JSON.stringify(payload))
  }
})

t.test(`payloads over ${MAX_RAW_PAYLOAD_BYTES} bytes are refused before parsing`, async (t) => {
  const pairs = (n: number) => Array.from({ length: n }, () => '1:2').join(',')
  const atLimit = `{${pairs(1023)}}`.padEnd(MAX_RAW_PAYLOAD_BYTES, ' ')
  t.equal(Buffer.byteLength(atLimit), MAX_RAW_PAYLOAD_BYTES)
  t.equal(parseRawPayload(atLimit).sensors.length, 1023)
  const error = t.throws(() => parseRawPayload(`${atLimit} `)) as RawPayloadError
  t.type(error, RawPayloadError)
  t.equal(error.position, null)
  t.match(error.message, /4097 bytes, over the limit of 4096/)
  t.throws(() => parseRawPayload(`{1:2}${'é'.repeat(2046)}`), RawPayloadError, 'bytes, not characters, are counted')
  t.throws(() => parseRawPayload(Buffer.alloc(5000, 0xff)), /5000 bytes/)
  t.throws(() => parseRawPayload('garbage'.repeat(1000)), /over the limit/, 'even garbage is not scanned')
})

const spaces = fc.stringMatching(/^ {0,2}$/)
const numberText = fc.stringMatching(/^[-0-9]{1,6}$/)
const timestamp = fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true })
  .map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z'))
type Pair = { kind: 't', value: string } | { kind: 'sensor', id: string, value: string | null }
const pairArb: fc.Arbitrary<Pair> = fc.oneof(
  timestamp.map((value) => ({ kind: 't' as const, value })),
  fc.record({
    kind: fc.constant('sensor' as const),
    id: numberText,
    value: fc.oneof(numberText, fc.tuple(numberText, numberText).map(([a, b]) => `${a}.${b}`), fc.constant(null))
  }))

t.test('property: generated well-formed payloads parse to their model', async (t) => {
  fc.assert(fc.property(fc.array(fc.tuple(pairArb, spaces, spaces, spaces, fc.boolean())), spaces, spaces, spaces, (pairs, lead, trail, outer) => {
    let text = `${outer}{${lead}`
    for (const [pair, before, after, around, comma] of pairs) {
      text += pair.kind === 't'
        ? `t${before}:${pair.value}`
        : `${pair.id}${before}:${after}${pair.value ?? 'null'}`
      // Without a comma a space keeps adjacent values and keys apart, as in the firmware's output.
      text += comma ? `${around},${around}` : ' '
    }
    text += `${trail}}${outer}`
    const timestamps = pairs.flatMap(([p]) => (p.kind === 't' ? [p.value] : []))
    const expected: RawPayload = {
      recordedAt: timestamps[timestamps.length - 1] ?? null,
      sensors: pairs.flatMap(([p]) => (p.kind === 'sensor' && p.value !== null ? [{ id: p.id, value: p.value }] : []))
    }
    return JSON.stringify(parseRawPayload(text)) === JSON.stringify(expected)
  }), { numRuns: 1000 })
  t.pass()
})

t.test('property: garbage never throws anything but RawPayloadError', async (t) => {
  const alphabet = fc.constantFrom('{', '}', ',', ':', ' ', '.', '-', 't', 'n', 'u', 'l', '0', '1', '9', 'T', 'Z', 'e', '\n', '\t', '"', 'é')
  const nearMiss = fc.array(alphabet, { maxLength: 40 }).map((chars) => chars.join(''))
  const mutated = fc.tuple(fc.constantFrom('{t:2026-03-02T10:25:13Z,91:123.45,10:null}', '{}', '{1:2 , 3:-4.5}'),
    fc.nat(), fc.string({ maxLength: 3 }))
    .map(([base, at, insert]) => base.slice(0, at % (base.length + 1)) + insert + base.slice((at % (base.length + 1)) + 1))
  const anything = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), nearMiss, mutated, fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)))
  let parsed = 0
  fc.assert(fc.property(anything, (payload) => {
    try {
      const result = parseRawPayload(payload)
      parsed++
      return Array.isArray(result.sensors) && result.sensors.every((s) => /^[-0-9]+$/.test(s.id) && /^[-0-9]+(\.[-0-9]+)?$/.test(s.value))
    } catch (error) {
      return error instanceof RawPayloadError
    }
  }), { numRuns: 5000 })
  t.ok(parsed > 0, `${parsed} of the random payloads happened to be valid`)
})
