import t from 'tap'
import fc from 'fast-check'
import { createTestDatabase } from '@esp/db/testing'
import { bucketStart, parseRollup, rollupSql, type Rollup, type RollupUnit } from '../../src/readings/rollup.js'

/*
 * The engines bucket in SQL and the reference bucketStart in TypeScript; both must agree to the
 * millisecond, so each rollupSql description is run through the real PostgreSQL here.
 */

const maxValue: Record<RollupUnit, number> = { y: 30, M: 40, w: 60, d: 400, h: 1000, m: 5000, s: 100_000, ms: 2_000_000 }
const rollupArb = fc.constantFrom<RollupUnit>('y', 'M', 'w', 'd', 'h', 'm', 's', 'ms')
  .chain((unit) => fc.integer({ min: 1, max: maxValue[unit] }).map((value) => parseRollup(`${value}${unit}`)))
// From just before the week origin, so that flooring before an origin is covered as well.
const dateArb = fc.date({ min: new Date('1969-12-20T00:00:00Z'), max: new Date('2100-12-31T23:59:59.999Z'), noInvalidDate: true })

const { sql } = await createTestDatabase(t, { max: 1 })

/** What an engine would run for the rollup, applied to every time in `times`. */
async function sqlBuckets (rollup: Rollup, times: Date[]): Promise<string[]> {
  const texts = times.map((time) => time.toISOString())
  // One JSON text parameter: the driver cannot bind a JS array to a timestamptz[] parameter here.
  const json = JSON.stringify(texts)
  const spec = rollupSql(rollup)
  let rows: { b: string }[]
  if (spec.kind === 'bin') {
    rows = await sql<{ b: string }[]>`
      select to_char(date_bin(${spec.interval}::interval, t::timestamptz, ${spec.origin}::timestamptz) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as b
      from json_array_elements_text(${json}::json) with ordinality as u(t, n) order by n`
  } else if (spec.kind === 'trunc') {
    const months = spec.field === 'year' ? 12 : 1
    rows = await sql<{ b: string }[]>`
      with u as (select t::timestamptz at time zone 'UTC' as local, n from json_array_elements_text(${json}::json) with ordinality as e(t, n)),
      idx as (
        select n, floor(((extract(year from local)::int - 1970) * 12 + extract(month from local)::int - 1)::numeric / ${months}::int) as i
        from u
      )
      select to_char(timestamp '1970-01-01' + make_interval(months => (floor(i / ${spec.value}::int) * ${spec.value}::int * ${months}::int)::int),
                     'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as b
      from idx order by n`
  } else {
    return texts
  }
  return rows.map((r) => r.b)
}

t.test('PostgreSQL is new enough to floor before the origin', async (t) => {
  const [row] = await sql<{ b: string }[]>`
    select to_char(date_bin('7 days', timestamptz '1970-01-01T00:00:00Z', timestamptz '1970-01-05T00:00:00Z') at time zone 'UTC', 'YYYY-MM-DD') as b`
  t.equal(row?.b, '1969-12-29')
})

t.test('property: bucketStart equals the SQL bucketing of rollupSql', async (t) => {
  await fc.assert(fc.asyncProperty(rollupArb, fc.array(dateArb, { minLength: 1, maxLength: 50 }), async (rollup, times) => {
    const expected = await sqlBuckets(rollup, times)
    const actual = times.map((time) => bucketStart(time, rollup).toISOString())
    if (actual.join() !== expected.join()) {
      throw new Error(`${rollup.text}: ${JSON.stringify({ times, actual, expected })}`)
    }
  }), { numRuns: 300 })
  t.pass()
})

t.test('the edge rollups give valid SQL', async (t) => {
  const times = [new Date('1969-06-15T12:00:00Z'), new Date('1970-01-01T00:00:00Z'), new Date('2200-12-31T23:59:59.999Z'), new Date('2024-02-29T12:34:56.789Z')]
  for (const text of ['1ms', '999999999ms', '999999999s', '99999999m', '8765820h', '365242d', '52177w', '12000M', '1000y', '25h', '30d', '1d', '7d']) {
    const rollup = parseRollup(text)
    t.same(await sqlBuckets(rollup, times), times.map((time) => bucketStart(time, rollup).toISOString()), text)
  }
})
