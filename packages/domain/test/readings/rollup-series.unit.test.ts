import t from 'tap'
import fc from 'fast-check'
import { RollupSeries } from '../../src/readings/rollup-series.js'
import { formatReadingTime } from '../../src/time.js'

const instant = fc.oneof(
  // buckets minutes or days apart, whole seconds or with milliseconds (rollups of 500ms)
  fc.integer({ min: 0, max: 5_000_000 }).map((m) => Date.UTC(2020, 0, 1) + m * 60_000),
  fc.integer({ min: -8.64e15, max: 8.64e15 })
)
const value = fc.oneof(fc.double(), fc.integer(), fc.constantFrom(0, -0, 1e21, 5e-324, -1.5e-7, 101325.01, NaN, Infinity, -Infinity))

t.test('the bytes of a series are what JSON.stringify makes of its head and its tuples', async (t) => {
  fc.assert(fc.property(fc.array(fc.tuple(instant, value), { maxLength: 300 }), fc.string(), (buckets, key) => {
    const series = new RollupSeries(Float64Array.from(buckets, (b) => b[0]), Float64Array.from(buckets, (b) => b[1]))
    const head = { device_id: 1, sensor_key: key, sample_size: buckets.length }
    const tuples = buckets.map(([at, v]) => [formatReadingTime(at), Number.isFinite(v) ? v : null])
    const expected = JSON.stringify({ ...head, readings: tuples })
    return JSON.stringify(series.tuples()) === JSON.stringify(tuples) && series.tuples().every(([, v], i) => Object.is(v, tuples[i]?.[1])) &&
      series.json(`${JSON.stringify(head).slice(0, -1)},`).toString('utf8') === expected &&
      JSON.stringify({ ...head, readings: series }) === expected
  }), { numRuns: 2_000 })
  t.equal(new RollupSeries(new Float64Array(0), new Float64Array(0)).json('{"a":"é",').toString(), '{"a":"é","readings":[]}')
})

t.test('runs of a series written apart, and joined, are the bytes of the whole', async (t) => {
  fc.assert(fc.property(fc.array(fc.array(fc.tuple(instant, value, fc.nat()), { maxLength: 40 }), { maxLength: 6 }), fc.boolean(), (runs, withCounts) => {
    const make = (buckets: [number, number, number][]): RollupSeries => new RollupSeries(Float64Array.from(buckets, (b) => b[0]), Float64Array.from(buckets, (b) => b[1]), withCounts ? Float64Array.from(buckets, (b) => b[2]) : undefined)
    const whole = make(runs.flat())
    const head = '{"device_id":1,'
    const expected = whole.json(head).toString('utf8')
    let follows = false
    const parts = runs.map((run) => {
      const bytes = make(run).tuplesJson(follows).toString('utf8')
      if (run.length > 0) follows = true
      return bytes
    })
    return `${head}"readings":[${parts.join('')}]}` === expected &&
      RollupSeries.concat(runs.map(make)).json(head).toString('utf8') === expected
  }), { numRuns: 500 })
  t.equal(new RollupSeries(new Float64Array(0), new Float64Array(0)).tuplesJson(true).length, 0, 'no tuples, no comma')
})
