import t from 'tap'
import { autoRollup, isolatedPoints, reportingStep, rollupForRange } from '../app/history.js'

const HOUR = 3600
const DAY = 24 * HOUR

/**
 * The device page's choice of buckets (issue 39): the automatic rollup is never finer than the
 * device reports, a rollup chosen for one range gives way when another makes it useless, and a
 * value no line reaches is drawn as a point.
 */
t.test('the automatic rollup is never finer than what the device reports', async (t) => {
  t.equal(autoRollup(7 * DAY), '15m', 'a week: at most 800 buckets')
  t.equal(autoRollup(7 * DAY, HOUR), '1h', 'an hourly kit: hours')
  t.equal(autoRollup(DAY, HOUR), '1h', 'a day of an hourly kit: hours, not five minutes')
  t.equal(autoRollup(DAY, 60), '5m', 'a kit each minute: the range decides')
  t.equal(autoRollup(365 * DAY, HOUR), '1d', 'a year: days either way')
  t.equal(autoRollup(DAY, 2 * HOUR), '6h', 'every two hours: the next rollup up')
})

t.test('a rollup chosen for one range gives way to the automatic one where it makes no chart', async (t) => {
  t.equal(rollupForRange('1w', DAY), 'auto', "a year's weeks, then the last day: one bucket")
  t.equal(rollupForRange('1m', 365 * DAY), 'auto', 'minutes over a year: more than a chart shows')
  t.equal(rollupForRange('1h', 7 * DAY), '1h', 'hours over a week stay')
  t.equal(rollupForRange('auto', DAY), 'auto')
})

t.test("a device's reporting step, from the buckets that hold a value", async (t) => {
  const hourlyIn15m = { times: Array.from({ length: 96 }, (_, i) => i * 900), values: Array.from({ length: 96 }, (_, i) => i % 4 === 0 ? i : null) }
  t.equal(reportingStep([hourlyIn15m]), HOUR)
  const withGap = { times: [0, 900, 1800, 9000, 9900], values: [1, 2, 3, 4, 5] }
  t.equal(reportingStep([withGap]), 900, 'a gap does not move the median')
  t.equal(reportingStep([hourlyIn15m, withGap]), HOUR, 'the longest of the sensors')
  t.equal(reportingStep([{ times: [0], values: [1] }]), null, 'one value says nothing')
})

t.test('values no line reaches are drawn as points', async (t) => {
  t.same(isolatedPoints([1, null, 2, null, null, 3, 4, null]), [0, 2])
  t.same(isolatedPoints([null, 5, null]), [1])
  t.same(isolatedPoints([1, 2, 3]), [])
})
