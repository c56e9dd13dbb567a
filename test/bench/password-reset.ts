/**
 * `node --conditions=@esp/source --import tsx test/bench/password-reset.ts [pairs]`: the time of
 * POST /v0/password_resets for an existing and an unknown account, interleaved in pairs over real
 * HTTP on the platform as `pnpm start` runs it. A timing difference would let anyone learn which
 * accounts exist (issue 19, finding 7); CI checks the structure instead (password-resets.test.ts),
 * because a timing check with enough pairs is not reliable on a shared machine.
 */
import { startPlatform } from './setup.js'
import { percentile, progress, round } from './stats.js'

const pairs = Number(process.argv[2] ?? 400)
const platform = await startPlatform(process.env.DATABASE_URL)
try {
  const post = async (identifier: string): Promise<number> => {
    const start = performance.now()
    const res = await fetch(`${platform.base}/v0/password_resets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email_or_username: identifier }) })
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`password reset: ${res.status}`)
    return performance.now() - start
  }
  for (let i = 0; i < 50; i++) { await post('bench'); await post(`nobody${i}@example.org`) }
  const existing: number[] = []
  const unknown: number[] = []
  let existingSlower = 0
  for (let i = 0; i < pairs; i++) {
    // Alternate which goes first, so a warm connection or cache favours neither.
    const [a, b] = i % 2 === 0
      ? [await post('bench'), await post(`nobody-${i}@example.org`)]
      : [await post(`nobody-${i}@example.org`), await post('bench')].reverse() as [number, number]
    existing.push(a)
    unknown.push(b)
    if (a > b) existingSlower++
  }
  const figures = {
    pairs,
    existingMedianMs: round(percentile(existing, 50), 3),
    unknownMedianMs: round(percentile(unknown, 50), 3),
    existingP90Ms: round(percentile(existing, 90), 3),
    unknownP90Ms: round(percentile(unknown, 90), 3),
    pairsWhereExistingWasSlower: existingSlower
  }
  progress(JSON.stringify(figures))
  console.log(JSON.stringify(figures, null, 2))
} finally {
  await platform.close()
}
