import fc from 'fast-check'
import { BODY_LIMIT, credentials, makeWorld, rawHttp } from '@esp/test-helpers/fuzz-harness'
import { MATCHERS, type Operation, operationOrder, readOperations, requestFor } from '@esp/test-helpers/openapi-fuzz'
import { type Heap, startAllInOne, whileSampling } from './child.js'
import type { BenchPlatform } from './setup.js'
import { progress, round } from './stats.js'

export interface FuzzFigures {
  /** runs per operation (FUZZ_RUNS; FUZZ_LONG=1 is 200, as in the test) and the seed */
  runs: number
  seed: number
  operations: number
  requests: number
  seconds: number
  statuses: Record<string, number>
  /** the first requests that got no HTTP answer (the socket failed), and why */
  noAnswer: string[]
  nodeArgs: string
  /** RSS of the platform process, idle before the first request, in MB */
  beforeRssMb: number
  beforeHeapMb: Heap
  /** the highest RSS while the requests ran (the kernel's VmHWM) */
  peakRssMb: number
  /** RSS right after the last answer, and after `idleSeconds` idle */
  endRssMb: number
  afterRssMb: number
  afterHeapMb: Heap
  idleSeconds: number
}

const DEFAULT_SEED = 20261125
const CONCURRENCY = 4

/**
 * Case 6 under generated bad requests: the requests of test/fuzz/openapi.test.ts (the
 * same generator, seed and runs per operation, from the platform's own /docs/json) and its filter
 * sweep, sent over real sockets to `pnpm start` running as a process of its own, whose RSS is read
 * before, during and after. The test itself runs the platform in its own process and checks the
 * answers; this case checks only the memory, so the answers are counted, not judged. The rate
 * limits are lifted, as in the test's harness, so that the requests reach the routes.
 */
export async function benchFuzz (p: BenchPlatform, quick: boolean): Promise<FuzzFigures> {
  const runs = quick ? 2 : Number(process.env.FUZZ_RUNS ?? (process.env.FUZZ_LONG === '1' ? 200 : 24))
  const seed = Number(process.env.FUZZ_SEED ?? DEFAULT_SEED)
  const child = await startAllInOne(p, { RATE_LIMIT_PER_MINUTE: '100000000', AUTH_FAILURES_PER_ADDRESS: '100000000', AUTH_FAILURES_PER_ACCOUNT: '100000000' })
  try {
    // The fixtures go in through the bench's own server, on the same database.
    const world = await makeWorld({ app: p.app, database: p.database, dataDir: p.dataDir })
    const port = Number(new URL(child.base).port)
    const document = await (await fetch(`${child.base}/docs/json`)).json() as unknown
    const operations = readOperations(document).sort((a, b) => operationOrder(a) - operationOrder(b))
    // As the test does, the filter keys each list names when given one it does not take.
    const filterKeys = new Map<string, string[]>()
    for (const op of operations.filter((o) => o.method === 'GET' && !o.path.includes('{'))) {
      const res = await fetch(`${child.base}${op.path}?q[fuzzprobe_eq]=1`, { headers: { authorization: `Bearer ${world.owner.token}` } })
      const named = /allowed keys are ([^;]+);/.exec(await res.text())?.[1]?.split(',').map((k) => k.trim()).filter((k) => k !== '')
      if (named !== undefined) filterKeys.set(op.path, named)
    }
    const requests = operations.flatMap((op: Operation, index) =>
      fc.sample(requestFor(op, world.fixtures, { filterKeys: filterKeys.get(op.path) ?? [], bodyLimit: BODY_LIMIT }), { seed: seed + index, numRuns: runs }))
    for (const [path, keys] of filterKeys) {
      keys.forEach((key, k) => {
        for (const matcher of MATCHERS) requests.push({ method: 'GET', url: `${path}?q%5B${key}_${matcher}%5D=${k % 2 === 0 ? '2026-11-25' : '1'}`, role: 'anonymous', auth: 'header', headers: {}, label: 'filter sweep' })
      })
    }
    await new Promise((resolve) => setTimeout(resolve, quick ? 200 : 5000))
    const before = child.memory().rss
    const beforeHeap = await child.heap()
    await child.snapshot()
    progress(`fuzz: ${requests.length} requests (${runs} runs of ${operations.length} operations, seed ${seed}), ${CONCURRENCY} at a time; RSS before ${before} MB, heap ${beforeHeap.used} of ${beforeHeap.total} MB`)
    const statuses: Record<string, number> = {}
    const t0 = performance.now()
    let next = 0
    const noAnswer: string[] = []
    const { peak } = await whileSampling(child, async () => {
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) {
          const request = requests[next++]
          if (request === undefined) break
          const auth = credentials(request, world)
          const url = auth.query === '' ? request.url : `${request.url}${request.url.includes('?') ? '&' : '?'}${auth.query}`
          const answer = await rawHttp(port, { method: request.method, url, headers: { ...request.headers, ...auth.headers }, ...(request.body === undefined ? {} : { body: request.body }) })
            .catch((err: unknown) => {
              if (noAnswer.length < 5) noAnswer.push(`${request.method} ${request.url.slice(0, 100)} (${request.label}, ${String(request.body?.length ?? 0)} bytes): ${String(err)}`)
              return { status: 0, caught: true }
            })
          if (answer.status === 0 && noAnswer.length < 5 && !('caught' in answer)) noAnswer.push(`${request.method} ${request.url.slice(0, 100)} (${request.label}, ${String(request.body?.length ?? 0)} bytes): closed without an answer`)
          const klass = answer.status === 0 ? 'no answer' : `${Math.floor(answer.status / 100)}xx`
          statuses[klass] = (statuses[klass] ?? 0) + 1
        }
      }))
    }, (second, rss) => { if (second % 30 === 0) progress(`fuzz: ${next} of ${requests.length} sent, RSS ${rss} MB`) })
    const seconds = (performance.now() - t0) / 1000
    const end = child.memory().rss
    const idleSeconds = quick ? 1 : 60
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000))
    const after = child.memory()
    const afterHeap = await child.heap()
    await child.snapshot()
    const figures: FuzzFigures = {
      runs,
      seed,
      operations: operations.length,
      requests: requests.length,
      seconds: round(seconds, 1),
      statuses,
      noAnswer,
      nodeArgs: child.nodeArgs,
      beforeRssMb: before,
      beforeHeapMb: beforeHeap,
      peakRssMb: Math.max(peak, after.peak),
      endRssMb: end,
      afterRssMb: after.rss,
      afterHeapMb: afterHeap,
      idleSeconds
    }
    progress(`fuzz: ${JSON.stringify(figures)}`)
    return figures
  } finally {
    await child.stop()
  }
}
