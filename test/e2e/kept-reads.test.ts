import t from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { startApiReplicas } from '@esp/test-helpers/process'

// Issue 37: each api process keeps representations by their revisions, and checks them with a
// statement run after each request arrives. Two real api processes on one database; writes go
// through either one while readers ask both, by every route that shows the device (the device,
// a page, its owner, the owner's /me), anonymously and as the owner. Once a write has returned,
// or a reader has seen a version, no answer that starts later may show an older one.

const WRITES = 60
const READERS = 6

interface Read { route: string, started: number, ended: number, version: number }

t.test('a write seen by any caller is never followed by an older answer from either process', async (t) => {
  const database = await createTestDatabase(t)
  const bases = await startApiReplicas(t, database.url, {})
  const json = { 'content-type': 'application/json' }
  const signup = await fetch(`${bases[0]}/v0/users`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'keeper', email: 'keeper@example.org', password: 'keeper password' }) })
  t.equal(signup.status, 201)
  const owner = (await signup.json() as { id: number }).id
  const session = await fetch(`${bases[0]}/v0/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ username: 'keeper', password: 'keeper password' }) })
  const token = (await session.json() as { access_token: string }).access_token
  const auth = { authorization: `Bearer ${token}` }
  const created = await fetch(`${bases[0]}/v0/devices`, { method: 'POST', headers: { ...json, ...auth }, body: JSON.stringify({ name: 'v0' }) })
  t.equal(created.status, 201)
  const device = (await created.json() as { id: number }).id

  const version = (name: string | undefined): number => Number(/^v(\d+)$/.exec(name ?? '')?.[1] ?? NaN)
  type Body = { name?: string, devices?: Array<{ id: number, name: string }> } | Array<{ id: number, name: string }>
  const routes: Array<{ route: string, path: string, headers: Record<string, string>, pick: (body: Body) => string | undefined }> = [
    { route: 'device, anonymous', path: `/v0/devices/${device}`, headers: {}, pick: (b) => (b as { name: string }).name },
    { route: 'device, owner', path: `/v0/devices/${device}`, headers: auth, pick: (b) => (b as { name: string }).name },
    { route: 'page', path: '/v0/devices?per_page=10', headers: {}, pick: (b) => (b as Array<{ id: number, name: string }>).find((d) => d.id === device)?.name },
    { route: 'owner, anonymous', path: `/v0/users/${owner}`, headers: {}, pick: (b) => (b as { devices: Array<{ id: number, name: string }> }).devices.find((d) => d.id === device)?.name },
    { route: '/me', path: '/v0/me', headers: auth, pick: (b) => (b as { devices: Array<{ id: number, name: string }> }).devices.find((d) => d.id === device)?.name }
  ]

  const writesDone: number[] = [0]
  const reads: Read[] = []
  const state = { writing: true }
  const reader = async (k: number): Promise<void> => {
    for (let i = k; state.writing; i++) {
      const base = bases[i % bases.length] as string
      const { route, path, headers, pick } = routes[Math.floor(i / bases.length) % routes.length] as (typeof routes)[number]
      const started = performance.now()
      const res = await fetch(`${base}${path}`, { headers })
      const body = await res.json() as Body
      t.equal(res.status, 200)
      reads.push({ route: `${route} from ${base === bases[0] ? 'A' : 'B'}`, started, ended: performance.now(), version: version(pick(body)) })
    }
  }
  const readers = Array.from({ length: READERS }, async (_, k) => { await reader(k) })
  for (let n = 1; n <= WRITES; n++) {
    // Writes through either process, a few reads apart.
    await new Promise((resolve) => setTimeout(resolve, 5 + (n % 4) * 5))
    const res = await fetch(`${bases[n % 2]}/v0/devices/${device}`, { method: 'PATCH', headers: { ...json, ...auth }, body: JSON.stringify({ name: `v${n}` }) })
    t.equal(res.status, 200)
    writesDone[n] = performance.now()
  }
  state.writing = false
  await Promise.all(readers)

  t.ok(reads.length > WRITES * 10, `${reads.length} reads`)
  t.ok(reads.every((r) => Number.isInteger(r.version)), 'every answer shows the device')
  const stale: string[] = []
  const byEnd = [...reads].sort((a, b) => a.ended - b.ended)
  for (const read of reads) {
    const written = writesDone.findLastIndex((done) => done < read.started)
    // The newest version any answer that had ended before this one started showed.
    let seen = 0
    for (const other of byEnd) {
      if (other.ended >= read.started) break
      seen = Math.max(seen, other.version)
    }
    if (read.version < Math.max(written, seen)) stale.push(`${read.route}: v${read.version} after v${Math.max(written, seen)} was written or seen`)
  }
  t.same(stale, [], 'no answer older than a write that had returned or a version already seen')
  const versions = new Set(reads.map((r) => r.version))
  t.ok(versions.size > WRITES / 2, `the readers saw ${versions.size} of ${WRITES + 1} versions`)
})
