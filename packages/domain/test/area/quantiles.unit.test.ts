import t from 'tap'
import { seededRandom } from '@esp/test-helpers/random'
import { quantilesOf } from '../../src/area/statistics.js'

/**
 * The order statistics of a window by selection, against the same fractions of the sorted values
 * (linear between neighbours), over generated arrays: ties, runs, sorted and reversed input,
 * one and two values.
 */
t.test('quantilesOf = the sorted values, linearly between neighbours', async (t) => {
  const random = seededRandom(5)
  const reference = (sorted: number[], q: number): number => {
    const h = (sorted.length - 1) * q
    const k = Math.floor(h)
    return k + 1 < sorted.length ? (sorted[k] as number) + (h - k) * ((sorted[k + 1] as number) - (sorted[k] as number)) : sorted[k] as number
  }
  let checked = 0
  for (let run = 0; run < 2000; run++) {
    const n = 1 + Math.floor(random() * (run % 10 === 0 ? 3 : 400))
    const kind = run % 5
    let values = Array.from({ length: n }, () => kind === 1 ? Math.floor(random() * 4) : random() * 200 - 100)
    if (kind === 2) values.sort((a, b) => a - b)
    if (kind === 3) values.sort((a, b) => b - a)
    if (kind === 4) values = values.map((v, i) => i % 3 === 0 ? 7 : v)
    const qs = Array.from({ length: 1 + Math.floor(random() * 5) }, () => random() < 0.2 ? [0, 1, 0.5][Math.floor(random() * 3)] as number : random())
    const sorted = [...values].sort((a, b) => a - b)
    const got = quantilesOf(Float64Array.from(values), n, qs)
    qs.forEach((q, i) => {
      const want = reference(sorted, q)
      if (Math.abs((got[i] as number) - want) > 1e-12 * Math.max(1, Math.abs(want))) t.fail(`n ${n} q ${q}: ${got[i]}, expected ${want}`)
      else checked++
    })
  }
  t.ok(checked > 5000, `${checked} quantiles as the sorted values give them`)
})
