import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import t, { type Test } from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { KIT_SENSORS } from '../../scripts/demo-world.js'
import { PHYSICAL_RANGES, quantityOfSensor } from '../../scripts/sensor-values.js'
import { HTTP_LINE, repoRoot, startProcess, tempDataDir } from '@esp/test-helpers/process'

/**
 * The walkthrough (docs/walkthrough.md, from its top to "The explorer" heading), runs as written
 * against a platform started as it says (`pnpm start`, with the admin it names), so a new user's
 * first ten minutes cannot break unnoticed. Every ```bash block runs in order in one bash, with
 * `set -e`; curl must get a status below 400, or the status its line's comment names (`# 404 ...`).
 * Then, as a reader going on down the page, `pnpm demo` (the explorer's section) and the
 * analysts' session run on the same platform, and their answers are checked: the ids the page
 * names are the devices it says they are, and every value is inside its measurement's physical range.
 * A second test checks that every relative link of README.md and docs/*.md names a file that exists.
 */
const WALKTHROUGH = path.join(repoRoot, 'docs', 'walkthrough.md')
const MQTT_LINE = /MQTT\s+mqtt:\/\/([\d.]+):(\d+)/

/**
 * bash run before the walkthrough: stop at the first failing command, and check every curl's status.
 * With ESP_ANSWERS not empty, each curl's command line and what it wrote to stdout are kept there too
 * (`<n>.cmd`, `<n>.out`), numbered through a file, since a curl in a pipeline runs in a subshell.
 */
const PRELUDE = String.raw`
set -Eeuo pipefail
trap 'echo "walkthrough command failed (exit $?): $BASH_COMMAND" >&2' ERR
ESP_EXPECT=
curl () {
  local err rc=0 status n
  err=$(mktemp)
  if [ -n "$ESP_ANSWERS" ]; then
    n=$(( $(cat "$ESP_ANSWERS/count" 2>/dev/null || echo 0) + 1 ))
    echo "$n" > "$ESP_ANSWERS/count"
    printf '%s\n' "$*" > "$ESP_ANSWERS/$n.cmd"
    command curl -w '%{stderr}\nESP_HTTP_STATUS %{http_code}\n' "$@" 2>"$err" | tee "$ESP_ANSWERS/$n.out" || rc=$?
  else
    command curl -w '%{stderr}\nESP_HTTP_STATUS %{http_code}\n' "$@" 2>"$err" || rc=$?
  fi
  status=$(sed -n 's/^ESP_HTTP_STATUS //p' "$err" | tail -1)
  grep -v '^ESP_HTTP_STATUS ' "$err" | grep -v '^$' >&2 || true
  rm -f "$err"
  echo "# HTTP $status <- curl $*" >&2
  if [ "$rc" -ne 0 ]; then echo "curl exited $rc: curl $*" >&2; return "$rc"; fi
  if [ -n "$ESP_EXPECT" ]; then
    [ "$status" = "$ESP_EXPECT" ] || { echo "expected HTTP $ESP_EXPECT, got $status: curl $*" >&2; return 1; }
  elif [ "$status" -ge 400 ]; then
    echo "HTTP $status: curl $*" >&2; return 1
  fi
}
`

export interface Walkthrough {
  /** the variables of the walkthrough's `... pnpm start` line */
  startEnv: Record<string, string>
  /** the ```bash blocks, in order */
  blocks: string[]
}

export function walkthrough (page: string): Walkthrough {
  const to = page.indexOf('\n## The explorer')
  if (to < 0) throw new Error('docs/walkthrough.md has no "## The explorer" heading, where the walkthrough ends')
  const text = page.slice(0, to)
  const startLine = /^```sh\n(.*pnpm start)\n```/m.exec(text)?.[1] ?? ''
  const startEnv = Object.fromEntries([...startLine.matchAll(/(\w+)=('[^']*'|\S+)/g)].map(([, key = '', value = '']) => [key, value.replace(/^'(.*)'$/, '$1')]))
  const blocks = [...text.matchAll(/^```bash\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '')
  return { startEnv, blocks }
}

/** The "For analysts" session: the first ```sh block under its heading. */
export function analystSession (page: string): string {
  const from = page.indexOf('\n## For analysts')
  const block = from < 0 ? null : /^```sh\n([\s\S]*?)^```/m.exec(page.slice(from))
  if (block === null) throw new Error('docs/walkthrough.md has no analysts\' session under "## For analysts"')
  return block[1] ?? ''
}

/** A curl line whose comment names an error status expects that status instead of success. */
const expectingStatus = (block: string): string =>
  block.split('\n').map((line) => {
    const status = /^curl\b.*\s#\s*([1-5]\d\d)\b/.exec(line)?.[1]
    return status === undefined ? line : `ESP_EXPECT=${status} ${line}`
  }).join('\n')

async function runBash (script: string, options: { cwd: string, env: Record<string, string | undefined>, timeoutMs: number }): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const file = path.join(options.cwd, 'walkthrough.sh')
  writeFileSync(file, script)
  const child = spawn('bash', [file], { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8') })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
  // The whole group, so a background mosquitto_sub or the simulator goes too.
  const timer = setTimeout(() => { if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL') }, options.timeoutMs)
  const code = await new Promise<number | null>((resolve) => { child.on('close', (status) => { resolve(status) }) })
  clearTimeout(timer)
  return { code, stdout, stderr }
}

t.test('the walkthrough runs as written against a started platform', async (t) => {
  const { startEnv, blocks } = walkthrough(readFileSync(WALKTHROUGH, 'utf8'))
  t.ok(startEnv.ADMIN_USERNAME !== undefined && startEnv.ADMIN_PASSWORD !== undefined, 'the walkthrough starts the platform with an admin')
  t.ok(blocks.length >= 6, `the walkthrough's bash blocks (${blocks.length})`)

  const dataDir = tempDataDir(t)
  const started = Date.now()
  // The database is a clone of the suite's migrated and seeded template rather than a new embedded
  // one (start.test.ts covers that start; initdb alone would take most of this test's time). Load
  // shedding is off: on a CI machine busy with other test files the first requests after a start
  // could be turned away with 503 (the pressure checks have tests of their own).
  const { url } = await createTestDatabase(t)
  const platform = startProcess(t, 'scripts/start.ts', {
    ...startEnv, PORT: '0', MQTT_PORT: '0', DATA_DIR: dataDir, DATABASE_URL: url, PRESSURE_MAX_EVENT_LOOP_DELAY_MS: '0', PRESSURE_MAX_DB_WAIT_MS: '0'
  })
  const base = (await platform.waitFor(HTTP_LINE))[1] ?? ''
  const mqttPort = (await platform.waitFor(MQTT_LINE))[2] ?? ''
  t.comment(`platform up in ${Date.now() - started} ms`)

  // The walkthrough's commands write files (me.png, sd-card.csv, readings.ndjson) where they run, and
  // `pnpm simulate` needs the workspace: a folder of the test's own under the ignored .data.
  mkdirSync(path.join(repoRoot, '.data'), { recursive: true })
  const cwd = mkdtempSync(path.join(repoRoot, '.data', 'readme-'))
  t.teardown(() => { rmSync(cwd, { recursive: true, force: true }) })
  const trailer = 'echo; echo "ESP_VARS $(jq -nc --arg token "$TOKEN" --arg admin "$ADMIN_TOKEN" --arg device "$DEVICE" --arg deviceToken "$DEVICE_TOKEN" --arg import "$IMPORT" --arg kitchen "$KITCHEN" \'$ARGS.named\')"'
  const script = [PRELUDE, ...blocks.map(expectingStatus), trailer].join('\n')
  const run = await runBash(script, {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', H: base, MQTT_PORT: mqttPort, DATA_DIR: dataDir, ESP_ANSWERS: '' },
    timeoutMs: 60_000
  })
  t.comment(`walkthrough ran in ${Date.now() - started} ms since the start`)
  t.equal(run.code, 0, 'every command of the walkthrough succeeds', { stderr: run.stderr.slice(-4000), platform: platform.output().slice(-2000) })

  const vars = JSON.parse(/^ESP_VARS (.*)$/m.exec(run.stdout)?.[1] ?? '{}') as Record<string, string>
  t.match(vars.token, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'ada has an access token after the password reset')
  t.match(vars.admin, /^[\w-]+\.[\w-]+\.[\w-]+$/, 'the admin of the start line logs in')
  t.match(vars.device, /^\d+$/, 'the device was created')
  t.match(vars.deviceToken, /^[a-z0-9]{6}$/, 'its owner sees its token')
  t.match(vars.import, /^\d+$/, 'the CSV import was accepted')
  t.match(vars.kitchen, /^\d+$/, 'the second device was created')
  // (t.ok, not t.match: a failure would print the whole output)
  t.ok(run.stdout.includes('"message":"Stored 2 readings"'), 'the readings POST stores both values')
  t.ok(run.stdout.includes(`devices/${vars.device ?? 'none'}/readings {"device_id":${vars.device ?? 'none'},`), 'mosquitto_sub prints a live reading of the device')
  t.ok(run.stdout.includes('{"status":"ready"}'), 'the platform is ready')
  t.ok(/^total: 1\r?$/im.test(run.stdout), 'the users list has its pagination headers')
  t.ok(run.stdout.includes('"name":"Barcelona"'), 'the admin added the tags')
  t.ok(existsSync(path.join(cwd, 'readings.ndjson')) && readFileSync(path.join(cwd, 'readings.ndjson'), 'utf8').includes('21.5'), 'the export has the posted reading')

  // What the walkthrough did is there afterwards.
  const device = await (await fetch(`${base}/v0/devices/${vars.device ?? ''}`)).json() as { name: string, user_tags: string[], data: { sensors: Array<{ id: number, value: number | null }> } }
  t.match(device, { name: 'Balcony', user_tags: ['Barcelona', 'Research'] })
  t.equal((await fetch(`${base}/v0/devices/${vars.kitchen ?? ''}`)).status, 404, 'the private kitchen is hidden from anonymous callers')
  t.same(outsideRange(device.data.sensors), [], 'the balcony\'s latest values (pnpm simulate\'s among them) are believable')
  // The analysts' section counts on these ids.
  t.equal(vars.device, '1', 'the walkthrough\'s Balcony is device 1')
  t.equal(vars.kitchen, '2', 'and its Kitchen device 2')

  // Going on down the page: the explorer's `pnpm demo`, then the analysts' session.
  const page = readFileSync(WALKTHROUGH, 'utf8')
  t.ok(/^pnpm demo\b/m.test(page.slice(page.indexOf('\n## The explorer'))), 'the explorer\'s section has the reader run pnpm demo')
  const session = analystSession(page)
  // The session's exports cost an anonymous caller about 60 of the minute's 90 units
  // (docs/authentication.md, "Rate limits"). A reader reads on for a while between the walkthrough and it; the test waits,
  // when it must, for the minute the walkthrough used to end instead of raising the limit.
  const probe = await fetch(`${base}/v0/`)
  if (Number(probe.headers.get('x-ratelimit-remaining') ?? 90) < 75) {
    await new Promise((resolve) => setTimeout(resolve, (Number(probe.headers.get('x-ratelimit-reset') ?? 60) + 1) * 1000))
  }
  const answers = path.join(cwd, 'answers')
  mkdirSync(answers)
  const analyst = await runBash([PRELUDE, 'pnpm demo --url "$H"', session].join('\n'), {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', H: base, ESP_ANSWERS: answers },
    timeoutMs: 120_000
  })
  t.comment(`pnpm demo and the analysts' session ran in ${Date.now() - started} ms since the start`)
  t.equal(analyst.code, 0, 'pnpm demo and every command of the analysts\' session succeed', { stderr: analyst.stderr.slice(-4000), platform: platform.output().slice(-2000) })
  await checkAnalystAnswers(t, { base, session, answers, cwd, adminToken: vars.admin ?? '', balcony: Number(vars.device), kitchen: Number(vars.kitchen) })
})

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')

/** A Markdown page's text outside fenced code blocks, where its links and headings are. */
const prose = (text: string): string => text.replace(/^```[\s\S]*?^```/gm, '')

/** The anchors of a page's headings (a repeated heading's second anchor ends in -1, as on GitHub). */
function anchorsOf (text: string): Set<string> {
  const anchors = new Set<string>()
  for (const [, heading = ''] of prose(text).matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const base = anchorOf(heading)
    let anchor = base
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`
    anchors.add(anchor)
  }
  return anchors
}

t.test('every relative link of README.md and docs/*.md names a file (and heading) inside the repository', async (t) => {
  const pages = ['README.md', ...readdirSync(path.join(repoRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f))]
  for (const page of pages) {
    const text = readFileSync(path.join(repoRoot, page), 'utf8')
    const broken: string[] = []
    for (const [, target = ''] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue
      const [file = '', anchor] = target.split('#')
      const resolved = file === '' ? path.join(repoRoot, page) : path.resolve(repoRoot, path.dirname(page), file)
      if (path.relative(repoRoot, resolved).startsWith('..')) { broken.push(`${target} (outside the repository)`); continue }
      if (!existsSync(resolved)) { broken.push(`${target} (no such file)`); continue }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${target} (no such heading)`)
    }
    t.same(broken, [], `${page}: every relative link resolves`)
  }
})

/** Every value whose sensor's measurement it falls outside of (PHYSICAL_RANGES), as `sensor: value`. */
function outsideRange (values: Iterable<{ id: number, value: number | null }>): string[] {
  const outside: string[] = []
  for (const { id, value } of values) {
    if (value === null) continue
    const { min, max } = PHYSICAL_RANGES[quantityOfSensor(id)]
    if (!(value >= min && value <= max)) outside.push(`${id}: ${value}`)
  }
  return outside
}

/** What the analysts' commands answered (their ESP_ANSWERS copies and the files they wrote). */
async function checkAnalystAnswers (t: Test, run: { base: string, session: string, answers: string, cwd: string, adminToken: string, balcony: number, kitchen: number }): Promise<void> {
  const outputs = readdirSync(run.answers).filter((f) => f.endsWith('.cmd')).map((f) => ({
    cmd: readFileSync(path.join(run.answers, f), 'utf8'),
    out: readFileSync(path.join(run.answers, f.replace(/\.cmd$/, '.out')), 'utf8')
  }))
  const answerOf = (part: string): unknown => JSON.parse(outputs.find((o) => o.cmd.includes(part))?.out ?? 'null')
  const admin = { authorization: `Bearer ${run.adminToken}` }

  // The ids the walkthrough names: one kit throughout, and the devices of the export across devices.
  const kits = [...new Set([...run.session.matchAll(/\/devices\/(\d+)\/readings/g)].map((m) => Number(m[1])))]
  t.equal(kits.length, 1, `the session reads one kit (${kits.join(', ')})`)
  const kit = kits[0] ?? 0
  const lists = [...new Set([...run.session.matchAll(/device_ids=([\d,]+)/g)].map((m) => m[1] ?? ''))]
  t.equal(lists.length, 1, 'one list of devices throughout')
  const named = (lists[0] ?? '').split(',').map(Number)

  const demo = answerOf('owner_username_eq]=demo') as { id: number }[] | null
  const demoIds = (demo ?? []).map((d) => d.id)
  t.equal(demoIds.length, 20, 'the demo made 20 devices')
  t.equal(demoIds[0], kit, `the kit the walkthrough names (${kit}) is the demo's first device`)
  t.same(demoIds, demoIds.map((_, i) => kit + i), 'and the demo\'s devices follow it')
  // (As the admin from here on: admins are not rate limited, and see whether a device is private.)
  const deviceOf = async (id: number): Promise<{ name: string, data_policy: { is_private: boolean }, owner: { username: string }, location: { latitude: number, longitude: number }, data: { sensors: { id: number, value: number | null }[] } }> =>
    await (await fetch(`${run.base}/v0/devices/${id}`, { headers: admin })).json() as Awaited<ReturnType<typeof deviceOf>>
  const kitDevice = await deviceOf(kit)
  t.same([kitDevice.name, kitDevice.owner.username], ['Gràcia balcony', 'demo'], 'the kit with a year of readings')
  t.ok(named.includes(kit) && named.includes(run.balcony), `device_ids=${named.join(',')} names the kit and the walkthrough's Balcony`)
  t.ok(!named.includes(run.kitchen), 'and not the private Kitchen')
  for (const id of named) t.equal((await deviceOf(id)).data_policy.is_private, false, `device ${id} is public`)

  // The daily averages: the kit's temperature, each day's average of at most 25 hourly readings (the day the clocks go back).
  const daily = answerOf('rollup=1d') as { device_id: number, readings: [string, number | null, number][] } | null
  t.equal(daily?.device_id, kit, 'the daily averages are the kit\'s')
  const days = daily?.readings ?? []
  t.ok(days.length >= 300, `a year of days (${days.length})`)
  t.same(outsideRange(days.map(([, value]) => ({ id: 55, value }))), [], 'every daily average temperature is believable')
  t.ok(days.every(([, , count]) => count >= 1 && count <= 25), 'each day of at most 25 hourly readings')

  // Every sensor of the kit over a week of hours.
  const hourly = answerOf('sensor_ids=all') as { device_id: number, sensors: { sensor_id: number, readings: [string, number | null][] }[] } | null
  t.equal(hourly?.device_id, kit, 'the week of hours is the kit\'s')
  t.same((hourly?.sensors ?? []).map((s) => s.sensor_id).sort((a, b) => a - b), KIT_SENSORS.map((s) => s.id).sort((a, b) => a - b), 'one series for each of the kit\'s 12 sensors')
  t.ok((hourly?.sensors ?? []).every((s) => s.readings.length >= 168), 'each of at least 168 hours')
  t.same((hourly?.sensors ?? []).flatMap((s) => outsideRange(s.readings.map(([, value]) => ({ id: s.sensor_id, value })))), [], 'every hourly value is believable')

  // The files: the kit's Parquet and wide CSV, and the exports across devices.
  const kitRows = await parquetRows(path.join(run.cwd, 'kit.parquet'))
  t.ok(kitRows.length > 300 * 24 * KIT_SENSORS.length, `kit.parquet holds a year of the kit (${kitRows.length} values)`)
  t.same(outsideRange(kitRows.map((r) => ({ id: r.sensor_id, value: r.value }))), [], 'every value of kit.parquet is believable')
  const wide = readFileSync(path.join(run.cwd, 'kit.csv'), 'utf8').trim().split('\n').map((line) => line.split(','))
  const columns = (wide[0] ?? []).slice(1).map((header) => Number(/\[(\d+)\]$/.exec(header)?.[1]))
  t.equal(columns.length, KIT_SENSORS.length, 'kit.csv has a column per sensor')
  t.same(wide.slice(1).flatMap((line) => outsideRange(line.slice(1).flatMap((cell, i) => cell === '' ? [] : [{ id: columns[i] ?? 0, value: Number(cell) }]))), [], 'every value of kit.csv is believable')

  const some = readFileSync(path.join(run.cwd, 'some.csv'), 'utf8').trim().split('\n')
  t.equal(some[0], 'recorded_at,device_id,sensor_id,value', 'some.csv is the long CSV with device ids')
  const rows = some.slice(1).map((line) => line.split(',')).map(([, device = '', sensor = '', value = '']) => ({ device: Number(device), id: Number(sensor), value: Number(value) }))
  t.same([...new Set(rows.map((r) => r.device))].sort((a, b) => a - b), [...named].sort((a, b) => a - b), 'some.csv holds exactly the devices the walkthrough names')
  t.same(outsideRange(rows), [], 'every value of some.csv is believable')
  const rest = readFileSync(path.join(run.cwd, 'rest.csv'), 'utf8').trim().split('\n').filter((line) => line !== '')
  t.ok(rest.length > 0 && rest.every((line) => named.includes(Number(line.split(',')[1]))), `rest.csv resumes with those devices only (${rest.length} lines)`)

  const europe = await parquetRows(path.join(run.cwd, 'europe.parquet'))
  t.same(outsideRange(europe.map((r) => ({ id: r.sensor_id, value: r.value }))), [], 'every value of europe.parquet is believable')
  const inBox = [...new Set(europe.map((r) => Number(r.device_id)))].sort((a, b) => a - b)
  t.ok(inBox.includes(kit) && inBox.includes(run.balcony) && !inBox.includes(run.kitchen), `europe.parquet: the kit and the Balcony, not the Kitchen (${inBox.join(', ')})`)
  for (const id of inBox) {
    const { location } = await deviceOf(id)
    t.ok(location.longitude >= -10 && location.longitude <= 25 && location.latitude >= 35 && location.latitude <= 60, `device ${id} is inside the box`)
  }

  // The explorer's demo world looks believable: each demo device's latest values.
  let published = 0
  for (const id of demoIds) {
    const device = await deviceOf(id)
    if (device.data.sensors.some((s) => s.value !== null)) published++
    t.same(outsideRange(device.data.sensors), [], `demo device ${id}: every latest value is believable`)
  }
  t.equal(published, 16, 'the demo devices that published (4 never did)')
}

async function parquetRows (file: string): Promise<{ device_id?: number | bigint, sensor_id: number, value: number | null }[]> {
  const bytes = readFileSync(file)
  return await parquetReadObjects({ file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer }) as { device_id?: number | bigint, sensor_id: number, value: number | null }[]
}
