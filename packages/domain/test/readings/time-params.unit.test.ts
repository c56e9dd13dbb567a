import t from 'tap'
import fc from 'fast-check'
import { DateTime, FixedOffsetZone } from 'luxon'
import { ApiError } from '../../src/errors.js'
import { parseRecordedAt, parseTimeParam, parseToParam } from '../../src/readings/time-params.js'

const iso = (date: Date | null | undefined) => date?.toISOString()

t.test('from and to: every form the clients send', async (t) => {
  const accepted: [string, string][] = [
    ['2026-02-23T23:00:00.000Z', '2026-02-23T23:00:00.000Z'], // web, moment().toISOString()
    ['2024-01-30T00:00:00+02:00', '2024-01-29T22:00:00.000Z'],
    ['2024-01-30T00:00:00-05:30', '2024-01-30T05:30:00.000Z'],
    ['2024-01-30T00:00:00+0200', '2024-01-29T22:00:00.000Z'],
    ['2024-01-30T00:00:00+02', '2024-01-29T22:00:00.000Z'],
    ['2024-01-30 00:00:00+00:00', '2024-01-30T00:00:00.000Z'], // connector, pandas str()
    ['2024-01-30 00:00:00 00:00', '2024-01-30T00:00:00.000Z'], // the same with its + decoded to a space
    ['2024-01-30 06:00:00 02:00', '2024-01-30T04:00:00.000Z'],
    ['2001-01-01 00:00:00+00:00', '2001-01-01T00:00:00.000Z'], // the connector's default from
    ['2015-07-28', '2015-07-28T00:00:00.000Z'], // 2015 docs
    ['2016-06-08 10:30:00', '2016-06-08T10:30:00.000Z'],
    ['2016-06-08T10:30:00', '2016-06-08T10:30:00.000Z'],
    ['2016-06-08T10:30', '2016-06-08T10:30:00.000Z'],
    ['2016-06-08T10:30Z', '2016-06-08T10:30:00.000Z'],
    ['2016-06-08t10:30:00z', '2016-06-08T10:30:00.000Z'],
    ['2024-01-30T00:00:00.5Z', '2024-01-30T00:00:00.500Z'],
    ['2024-01-30T00:00:00.123456789Z', '2024-01-30T00:00:00.123Z'],
    ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
    ['2000-02-29', '2000-02-29T00:00:00.000Z'],
    ['1600000000', '2020-09-13T12:26:40.000Z'],
    ['0', '1970-01-01T00:00:00.000Z'],
    ['20240130', '1970-08-23T06:15:30.000Z'], // all digits are epoch seconds, never a basic-format date
    ['7258118399', '2199-12-31T23:59:59.000Z'],
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['2200-12-31T23:59:59.999Z', '2200-12-31T23:59:59.999Z'],
    [' 2024-01-30T00:00:00Z ', '2024-01-30T00:00:00.000Z']
  ]
  for (const [input, expected] of accepted) {
    t.equal(iso(parseTimeParam('from', input)), expected, input)
    t.equal(iso(parseTimeParam('to', input)), expected, input)
  }
})

t.test('to without a fraction of a second means through the end of that second; with one, exactly (issue 35)', async (t) => {
  const cases: [string, string][] = [
    ['2026-11-22T11:58:32Z', '2026-11-22T11:58:32.999Z'], // last_reading_at as printed
    ['2026-11-22 11:58:32+00:00', '2026-11-22T11:58:32.999Z'],
    ['2026-11-22T13:58:32+02:00', '2026-11-22T11:58:32.999Z'],
    ['2026-11-22T11:58', '2026-11-22T11:58:00.999Z'],
    ['2026-11-22', '2026-11-22T00:00:00.999Z'],
    [String(Date.UTC(2026, 10, 22, 11, 58, 32) / 1000), '2026-11-22T11:58:32.999Z'],
    ['2026-11-22T11:58:32.076Z', '2026-11-22T11:58:32.076Z'],
    ['2026-11-22T11:58:32.000Z', '2026-11-22T11:58:32.000Z'],
    ['2026-11-22T11:58:32.0769Z', '2026-11-22T11:58:32.076Z'],
    ['2200-12-31T23:59:59Z', '2200-12-31T23:59:59.999Z']
  ]
  for (const [text, expected] of cases) t.equal(iso(parseToParam(text)), expected, text)
  t.equal(parseToParam(undefined), undefined)
  t.equal(parseToParam(' '), undefined)
  t.throws(() => parseToParam('yesterday'), { message: /The to parameter/ })
})

t.test('from and to: absent is undefined', async (t) => {
  t.equal(parseTimeParam('from', undefined), undefined)
  t.equal(parseTimeParam('from', ''), undefined)
  t.equal(parseTimeParam('to', '  '), undefined)
})

t.test('from and to: anything else is a 400 naming the parameter', async (t) => {
  const rejected = ['2020-15', '2020-02-30', '2023-02-29', '2024-13-01', '2024-00-10', '2024-01-00', '2024-01-32', 'yesterday', 'now',
    '1969-12-31T23:59:59Z', '1970-01-01T00:30:00+01:00', '2201-01-01T00:00:00Z', '1900-01-01', '9999-12-31', '99999999999', '-1',
    '1600000000.5', '+1600000000', '123456789012', '2024-01-30T24:00:00Z', '2024-01-30T23:60:00Z', '2024-01-30T23:59:60Z',
    '2024-01-30T10:00:00+24:00', '2024-01-30T10:00:00+02:60', '2024-01-30T10', '2024-1-30', '24-01-30', '2024/01/30',
    '2024-01-30T', '2024-01-30T10:00:00.Z', '2024-01-30T10:00:00.1234567890Z', '2024-01-30T10:00:00ZZ', '2024-01-30T10:00:00 +02:00',
    '2024-01-30  10:00:00', 'Tue, 30 Jan 2024 10:00:00 GMT', 'null', 'undefined', '2024-01-30T10:00:00[UTC]', '１６００']
  for (const input of rejected) {
    for (const name of ['from', 'to'] as const) {
      const error = t.throws(() => parseTimeParam(name, input), `${name}=${input}`) as ApiError
      t.type(error, ApiError)
      t.match(error, {
        code: 'ESP_BAD_TIME_PARAMETER',
        id: 'bad_request',
        statusCode: 400,
        message: `The ${name} parameter must be an ISO8601 format date or datetime or an integer number of seconds since the start of the UNIX epoch.`,
        errors: { [name]: ['is not a valid time'] }
      }, `${name}=${input}`)
    }
  }
})

t.test('recorded_at: the forms that are posted', async (t) => {
  const accepted: [string, string][] = [
    ['2026-03-01T22:14:00Z', '2026-03-01T22:14:00.000Z'], // connector, firmware raw topic, SD upload
    ['2016-06-08 10:30:00', '2016-06-08T10:30:00.000Z'], // docs/mqtt.md, zone-less is UTC
    ['2016-06-08T10:30:00', '2016-06-08T10:30:00.000Z'],
    ['2016-06-08 10:30:00.25', '2016-06-08T10:30:00.250Z'],
    ['2024-01-30T00:00:00.000Z', '2024-01-30T00:00:00.000Z'],
    ['2024-01-30T00:00:00.999999Z', '2024-01-30T00:00:00.999Z'],
    ['2024-01-30T00:00:00+02:00', '2024-01-29T22:00:00.000Z'],
    ['2024-01-30 00:00:00+00:00', '2024-01-30T00:00:00.000Z'],
    ['2024-01-30T00:00:00-0330', '2024-01-30T03:30:00.000Z'],
    ['2001-01-01T00:00:00Z', '2001-01-01T00:00:00.000Z'], // connector backfills reach this far
    ['1969-07-20T20:17:40Z', '1969-07-20T20:17:40.000Z'], // no lower bound here
    ['0099-01-01T00:00:00Z', '0099-01-01T00:00:00.000Z'], // not read as 1999
    ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000Z'],
    ['  2024-01-30T00:00:00Z\n', '2024-01-30T00:00:00.000Z']
  ]
  for (const [input, expected] of accepted) t.equal(iso(parseRecordedAt(input)), expected, input)
})

t.test('recorded_at: everything else is null', async (t) => {
  const rejected: unknown[] = [1600000000, '1600000000', 0, null, undefined, true, {}, [], ['2024-01-30T00:00:00Z'],
    new Date('2024-01-30T00:00:00Z'), '', '2015-07-28', '2016-06-08 10:30', '2016-06-08T10:30Z', '2023-02-29 00:00:00',
    '2024-04-31T00:00:00Z', '2024-01-30T25:00:00Z', '2024-01-30 00:00:00 00:00', 'yesterday', '2024-01-30T00:00:00+2:00',
    '2024-01-30T00:00:00.Z', '12:00', 'Tue, 30 Jan 2024 10:00:00 GMT']
  for (const input of rejected) t.equal(parseRecordedAt(input), null, JSON.stringify(input) ?? String(input))
})

const dateArb = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-12-31T23:59:59.999Z'), noInvalidDate: true })
const pandas = (date: Date) => DateTime.fromJSDate(date, { zone: 'utc' }).toFormat('yyyy-MM-dd HH:mm:ssZZ')
const wholeSecond = (date: Date) => Math.floor(date.getTime() / 1000) * 1000

t.test('property: toISOString and the pandas form parse back to the same instant', async (t) => {
  fc.assert(fc.property(dateArb, (date) => {
    const text = pandas(date)
    return parseTimeParam('from', date.toISOString())?.getTime() === date.getTime() &&
      parseRecordedAt(date.toISOString())?.getTime() === date.getTime() &&
      parseTimeParam('to', text)?.getTime() === wholeSecond(date) &&
      parseTimeParam('to', text.replace('+', ' '))?.getTime() === wholeSecond(date) &&
      parseRecordedAt(text)?.getTime() === wholeSecond(date)
  }), { numRuns: 3000 })
  t.pass()
})

t.test('property: every offset gives the instant luxon reads', async (t) => {
  const offsetArb = fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 })
  fc.assert(fc.property(fc.date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2199-01-01T00:00:00Z'), noInvalidDate: true }), offsetArb, (date, minutes) => {
    const text = DateTime.fromJSDate(date).setZone(FixedOffsetZone.instance(minutes)).toFormat("yyyy-MM-dd'T'HH:mm:ss.SSSZZ")
    return parseTimeParam('from', text)?.getTime() === date.getTime() && parseRecordedAt(text)?.getTime() === date.getTime()
  }), { numRuns: 2000 })
  t.pass()
})

t.test('property: arbitrary text never throws anything but the 400', async (t) => {
  fc.assert(fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[0-9T:+\- .Z]{0,30}$/)), (text) => {
    parseRecordedAt(text)
    try {
      const date = parseTimeParam('from', text)
      return date === undefined || !Number.isNaN(date.getTime())
    } catch (error) {
      return error instanceof ApiError && error.code === 'ESP_BAD_TIME_PARAMETER'
    }
  }), { numRuns: 3000 })
  t.pass()
})

t.test('property: the contract form is read as the general parser reads it, real dates or not', async (t) => {
  const two = (n: number): string => String(n).padStart(2, '0')
  const canonical = fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }), fc.integer({ min: 0, max: 61 }))
    .map(([y, mo, d, h, mi, s]) => `${String(y).padStart(4, '0')}-${two(mo)}-${two(d)}T${two(h)}:${two(mi)}:${two(s)}`)
  const withMillis = fc.tuple(canonical, fc.integer({ min: 0, max: 999 }), fc.constantFrom('', 'Z', 'z', 'x')).map(([text, ms, z]) => `${text}.${String(ms).padStart(3, '0')}${z === '' ? 'Z' : z}`)
  // The form's separators in their places, anything between them, with or without milliseconds.
  const shaped = fc.array(fc.constantFrom('0', '1', '2', '9', 'a', ' ', '-', '+', '٣'), { minLength: 17, maxLength: 17 }).chain((c) => fc.boolean().map((millis) =>
    `${c.slice(0, 4).join('')}-${c.slice(4, 6).join('')}-${c.slice(6, 8).join('')}T${c.slice(8, 10).join('')}:${c.slice(10, 12).join('')}:${c.slice(12, 14).join('')}${millis ? `.${c.slice(14, 17).join('')}` : ''}Z`))
  // A leading space takes the text off the fast path and through the regex, as received; fast-check
  // throws with the first text on which the two differ.
  fc.assert(fc.property(fc.oneof(canonical.map((text) => `${text}Z`), withMillis, shaped), (text) => iso(parseRecordedAt(text)) === iso(parseRecordedAt(` ${text}`))), { numRuns: 5000 })
  t.pass('5000 texts read alike')
  t.equal(iso(parseRecordedAt('2024-02-29T23:59:59Z')), '2024-02-29T23:59:59.000Z')
  t.equal(iso(parseRecordedAt('1900-02-29T00:00:00Z')), undefined, 'no 29 February in 1900')
  t.equal(iso(parseRecordedAt('0001-01-01T00:00:00Z')), '0001-01-01T00:00:00.000Z')
  t.equal(iso(parseRecordedAt('2026-11-24T12:34:56.789Z')), '2026-11-24T12:34:56.789Z')
})
