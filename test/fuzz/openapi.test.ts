/**
 * Generated bad input over every operation of GET /docs/json (issue 19): wrong types, boundaries,
 * odd dates, hostile strings, malformed and oversize bodies, every list filter key and matcher, as
 * anonymous, another user and the owner of the resources in the path. No answer may be a 5xx,
 * every 4xx has the error shape as JSON, and a rejected request writes nothing. A new route is
 * covered as soon as the document lists it.
 *
 * A fixed seed by default, so CI sends the same requests every run and a red run can be replayed;
 * FUZZ_SEED=<n> picks another (FUZZ_SEED=random a new one each run); FUZZ_RUNS sets the runs per
 * operation (default 24); FUZZ_LONG=1 is 200.
 */
import v8 from 'node:v8'
import vm from 'node:vm'
import t from 'tap'
import fc from 'fast-check'
import * as domain from '@esp/domain'
import { BODY_LIMIT, buildAllInOne, credentials, installJournal, makeWorld, problemWith, rawHttp, settle, type Answer } from '@esp/test-helpers/fuzz-harness'
import { MATCHERS, ODD_DATES, type FuzzRequest, type Operation, operationOrder, readOperations, requestFor } from '@esp/test-helpers/openapi-fuzz'

// A collection before each reading, so that the figures are live memory rather than garbage not yet collected.
v8.setFlagsFromString('--expose-gc')
const collect = vm.runInNewContext('gc') as () => void

const DEFAULT_SEED = 20261125
const seed = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? DEFAULT_SEED)
const runs = Number(process.env.FUZZ_RUNS ?? (process.env.FUZZ_LONG === '1' ? 200 : 24))
/** One request in this many goes over a real socket instead of inject. */
const SOCKET_SHARE = 6

/** Filter keys of every FilterSpec the domain exports: the fallback when a list does not name its keys. */
function domainFilterKeys (): string[] {
  const keys = new Set<string>()
  const visit = (value: unknown, depth: number): void => {
    if (typeof value !== 'object' || value === null || depth > 1) return
    const entries = Object.entries(value)
    const isSpec = entries.length > 0 && entries.every(([, f]) => typeof f === 'object' && f !== null && 'column' in f && 'type' in f)
    if (isSpec) for (const [k] of entries) keys.add(k)
    else for (const [, v] of entries) visit(v, depth + 1)
  }
  visit(domain, 0)
  return [...keys].sort()
}

const excerpt = (value: string | Buffer | undefined, max = 300): string => {
  if (value === undefined) return '(none)'
  const text = Buffer.isBuffer(value) ? `<${value.length} bytes>` : value
  return text.length > max ? `${JSON.stringify(text.slice(0, max))}… (${text.length} chars)` : JSON.stringify(text)
}

// .taprc's 180 s is for the default run; a longer one gets about 60 ms a request on a busy machine.
if (runs > 24) t.setTimeout(Math.max(180_000, runs * 100 * 60))

t.test('generated requests over every operation of the OpenAPI document', async (t) => {
  const harness = await buildAllInOne(t)
  const { app, database } = harness
  collect()
  const memoryBefore = process.memoryUsage()
  const world = await makeWorld(harness)
  const journal = await installJournal(database)
  // The journal must see a write, or "nothing was written" below would hold for any request.
  const quiet = await journal()
  const write = await app.inject({ method: 'PATCH', url: '/v0/me', headers: { authorization: `Bearer ${world.owner.token}` }, payload: { city: 'Fuzzton' } })
  t.ok(write.statusCode === 200 && (await journal()).last > quiet.last, 'the write journal records an accepted write')
  const started = Date.now()
  const phases: string[] = []
  const phase = (name: string): void => { phases.push(`${name} ${((Date.now() - started) / 1000).toFixed(1)} s`) }
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const port = Number(new URL(address).port)
  const docs = await app.inject('/docs/json')
  t.equal(docs.statusCode, 200, 'the document is served')
  const operations = readOperations(docs.json()).sort((a, b) => operationOrder(a) - operationOrder(b))
  t.ok(operations.length > 20, `${operations.length} operations in the document`)

  const statuses = new Map<string, number>()
  const failures = new Map<string, { count: number, example: string }>()
  let sent = 0
  let viaSocket = 0
  // The journal's last id after the previous request: the queue is settled after every accepted
  // write, so any change seen after a rejected request is that request's own.
  let lastWrite = (await journal()).last

  /** Sends one request and returns what is wrong with the answer, described fully, or null. */
  async function send (request: FuzzRequest, op: Operation, via: 'any' | 'socket' | 'inject' = 'any'): Promise<string | null> {
    const auth = credentials(request, world)
    const url = auth.query === '' ? request.url : `${request.url}${request.url.includes('?') ? '&' : '?'}${auth.query}`
    const headers = { ...request.headers, ...auth.headers }
    sent += 1
    let answer: Answer
    if (via === 'socket' || (via === 'any' && sent % SOCKET_SHARE === 0)) {
      viaSocket += 1
      answer = await rawHttp(port, { method: request.method, url, headers, ...(request.body === undefined ? {} : { body: request.body }) })
    } else {
      // Distinct addresses per role, so that throttling one caller's failures does not silence another's requests.
      const res = await app.inject({ method: request.method as 'GET', url, headers, remoteAddress: `10.0.0.${['anonymous', 'other', 'owner', 'bad-credentials'].indexOf(request.role) + 1}`, ...(request.body === undefined ? {} : { payload: request.body }) })
      answer = { status: res.statusCode, contentType: String(res.headers['content-type'] ?? ''), body: res.body }
    }
    const klass = `${Math.floor(answer.status / 100)}xx`
    statuses.set(klass, (statuses.get(klass) ?? 0) + 1)
    let problem = problemWith(answer, /[?&]callback=[^&]/.test(url))
    if (answer.status < 300 && request.method !== 'GET') await settle(database)
    const after = await journal(lastWrite)
    const wrote = after.last !== lastWrite
    lastWrite = after.last
    if (answer.status >= 400 && problem === null && wrote) {
      problem = `a rejected request (${answer.status}) wrote: ${after.rows.map((r) => `${r.op} ${r.tbl} by ${JSON.stringify(r.query)}`).join('; ')}`
    }
    if (problem === null) return null
    const detail = `${problem}\n  ${request.method} ${excerpt(url, 500)} as ${request.role}${request.role === 'anonymous' ? '' : ` (${request.auth})`}\n  ` +
      `request headers ${JSON.stringify(request.headers)}, body (${request.label}) ${excerpt(request.body)}\n  answer ${answer.status} ${answer.contentType}: ${excerpt(answer.body)}`
    const key = `${op.method} ${op.path}: ${problem.replace(/ by .*/, '')} [${request.label}]`
    const seen = failures.get(key)
    failures.set(key, { count: (seen?.count ?? 0) + 1, example: seen?.example ?? detail })
    return detail
  }

  // Each list says which filter keys it takes when given one it does not (the compiler's 400);
  // a list that does not say gets every key the domain declares.
  const everyKey = domainFilterKeys()
  const filterKeys = new Map<string, string[]>()
  for (const op of operations.filter((o) => o.method === 'GET' && !o.path.includes('{'))) {
    const res = await app.inject({ url: `${op.path}?q[fuzzprobe_eq]=1`, headers: { authorization: `Bearer ${world.owner.token}` } })
    const named = /allowed keys are ([^;]+);/.exec(res.body)?.[1]?.split(',').map((k) => k.trim()).filter((k) => k !== '')
    const isList = named !== undefined || (res.statusCode === 400 && res.body.includes('fuzzprobe')) || op.parameters.some((p) => p.name === 'per_page' || p.name.startsWith('q['))
    if (isList) filterKeys.set(op.path, named ?? everyKey)
  }
  t.ok(filterKeys.size >= 5, `list routes found: ${[...filterKeys.keys()].join(', ')}`)

  for (const [index, op] of operations.entries()) {
    const arbitrary = fc.limitShrink(requestFor(op, world.fixtures, { filterKeys: filterKeys.get(op.path) ?? [], bodyLimit: BODY_LIMIT }), 20)
    const result = await fc.check(fc.asyncProperty(arbitrary, async (request) => {
      const problem = await send(request, op)
      if (problem !== null) throw new Error(problem)
    }), { seed: seed + index, numRuns: runs })
    const shrunk = result.errorInstance instanceof Error ? result.errorInstance.message : ''
    t.notOk(result.failed, `${op.method} ${op.path}`, result.failed ? { counterexample: `${shrunk}\n  (replay: FUZZ_SEED=${seed}, operation seed ${seed + index}, ${result.numRuns} runs, ${result.numShrinks} shrinks)` } : {})
  }

  phase('operations')
  // Every key with every matcher, once with a date (the famous 500) and once with a value of the seed's choice.
  const values = fc.sample(fc.constantFrom('2026-11-25', '2026-11-25T10:00:00Z', '1', '-1', '2147483648', 'true', '6f1e3c1c-4b5a-4d5e-9f00-0123456789ab', 'abc', '\u0000', '2026-02-31', ...ODD_DATES), { seed, numRuns: 4096 })
  for (const [path, keys] of filterKeys) {
    const op = operations.find((o) => o.method === 'GET' && o.path === path)
    if (op === undefined) continue
    const broken = new Set<string>()
    let i = 0
    for (const key of keys) {
      for (const matcher of MATCHERS) {
        // Alternately a valid date and the seed's value, so each key gets both over its matchers.
        const value = i % 2 === 0 ? '2026-11-25' : values[i % values.length] ?? '1'
        i += 1
        const request: FuzzRequest = { method: 'GET', url: `${path}?q%5B${key}_${matcher}%5D=${encodeURIComponent(value)}`, role: 'anonymous', auth: 'header', headers: {}, label: 'filter sweep' }
        if (await send(request, op, 'inject') !== null) broken.add(`q[${key}_${matcher}]=${value}`)
      }
    }
    t.equal(broken.size, 0, `GET ${path}: every filter key and matcher`, broken.size > 0 ? { broken: [...broken].slice(0, 30).join(' ') } : {})
  }

  phase('filter sweep')
  // Node's own parser and Fastify's limits, over the socket only: long URLs, large and odd headers.
  const limits = fc.oneof(
    fc.integer({ min: 9_000, max: 120_000 }).map((n) => ({ url: `/v0/devices?q%5Bname_cont%5D=${'a'.repeat(n)}`, headers: {} as Record<string, string>, label: `a ${n}-character query` })),
    fc.integer({ min: 150, max: 5_000 }).map((n) => ({ url: `/v0/devices/${'9'.repeat(n)}`, headers: {} as Record<string, string>, label: `a ${n}-digit id in the path` })),
    fc.integer({ min: 17_000, max: 70_000 }).map((n) => ({ url: '/v0/me', headers: { 'x-fuzz': 'h'.repeat(n) }, label: `a ${n}-byte header` })),
    fc.constantFrom(
      { url: '/v0/me', headers: { authorization: `Bearer ${'t'.repeat(10_000)}` }, label: 'a 10 kB bearer token' },
      { url: '/v0/devices', headers: { 'content-length': 'abc' }, label: 'a bad Content-Length' },
      { url: '/v0/devices', headers: { 'transfer-encoding': 'chunked, gzip' }, label: 'an odd Transfer-Encoding' },
      { url: '/v0/devices', headers: { 'x-bad\u0001': '1' }, label: 'a control character in a header name' },
      { url: '/v0/dev ices', headers: {}, label: 'a space in the path' },
      { url: '/v0/devices?%', headers: {}, label: 'a bare percent' },
      { url: '//v0//devices/../../etc/passwd', headers: {}, label: 'dot segments' },
      { url: '/v0/me', headers: { authorization: 'Basic %%%' }, label: 'Basic that is not base64' },
      { url: '/v0/me', headers: { accept: 'text/html;q=x, */*;q=0' }, label: 'an odd Accept' }
    )
  )
  const limitProblems = new Set<string>()
  for (const sample of fc.sample(limits, { seed, numRuns: Math.max(20, Math.floor(runs * 1.5)) })) {
    const op: Operation = { method: 'GET', path: '(parser limits)', parameters: [], bodies: [] }
    const problem = await send({ method: 'GET', url: sample.url, role: 'anonymous', auth: 'header', headers: sample.headers, label: sample.label }, op, 'socket')
      .catch((err: unknown) => `the socket failed: ${String(err)}`)
    if (problem !== null) limitProblems.add(problem)
  }
  t.equal(limitProblems.size, 0, 'long URLs and headers: 4xx in the error shape', limitProblems.size > 0 ? { problems: [...limitProblems].slice(0, 5) } : {})

  phase('parser limits')
  collect()
  const memoryAfter = process.memoryUsage()
  const mb = (n: number): string => `${Math.round(n / 1_048_576)} MB`
  t.comment(`seed ${seed} (FUZZ_SEED), ${runs} runs per operation, ${operations.length} operations`)
  t.comment(`requests sent: ${sent} (${viaSocket} over a socket), by status class: ${[...statuses].sort().map(([k, v]) => `${k} ${v}`).join(', ')}`)
  t.comment(`elapsed: ${phases.join(', ')}`)
  t.comment(`memory: rss ${mb(memoryBefore.rss)} -> ${mb(memoryAfter.rss)}, heapUsed ${mb(memoryBefore.heapUsed)} -> ${mb(memoryAfter.heapUsed)}`)
  for (const [key, { count, example }] of failures) t.comment(`failure x${count}: ${key}\n#   ${example.replace(/\n/g, '\n#   ')}`)
})
