import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { createTestDatabase } from '@esp/db/testing'
import { HTTP_LINE, repoRoot, startProcess, tempDataDir } from '../helpers/process.js'

/**
 * The README's walkthrough, from "Try it" to the "Benchmarks" heading, runs as written against a
 * platform started as the README says (`pnpm start`, with the admin it names), so a new user's
 * first ten minutes cannot break unnoticed. Every ```bash block runs in order in one bash, with
 * `set -e`; curl must get a status below 400, or the status its line's comment names (`# 404 ...`).
 */
const MQTT_LINE = /MQTT\s+mqtt:\/\/([\d.]+):(\d+)/

/** bash run before the walkthrough: stop at the first failing command, and check every curl's status. */
const PRELUDE = String.raw`
set -Eeuo pipefail
trap 'echo "README command failed (exit $?): $BASH_COMMAND" >&2' ERR
ESP_EXPECT=
curl () {
  local err rc=0 status
  err=$(mktemp)
  command curl -w '%{stderr}\nESP_HTTP_STATUS %{http_code}\n' "$@" 2>"$err" || rc=$?
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
  /** the variables of the README's `... pnpm start` line */
  startEnv: Record<string, string>
  /** the ```bash blocks, in order */
  blocks: string[]
}

export function walkthrough (readme: string): Walkthrough {
  const from = readme.indexOf('\nTry it')
  const to = readme.indexOf('\n### Benchmarks')
  if (from < 0 || to < from) throw new Error('the README has no walkthrough from "Try it" to "### Benchmarks"')
  const text = readme.slice(from, to)
  const startLine = /^```sh\n(.*pnpm start)\n```/m.exec(text)?.[1] ?? ''
  const startEnv = Object.fromEntries([...startLine.matchAll(/(\w+)=('[^']*'|\S+)/g)].map(([, key = '', value = '']) => [key, value.replace(/^'(.*)'$/, '$1')]))
  const blocks = [...text.matchAll(/^```bash\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? '')
  return { startEnv, blocks }
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

t.test('the README walkthrough runs as written against a started platform', async (t) => {
  const { startEnv, blocks } = walkthrough(readFileSync(path.join(repoRoot, 'README.md'), 'utf8'))
  t.ok(startEnv.ADMIN_USERNAME !== undefined && startEnv.ADMIN_PASSWORD !== undefined, 'the README starts the platform with an admin')
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

  // The README's commands write files (me.png, sd-card.csv, readings.ndjson) where they run, and
  // `pnpm simulate` needs the workspace: a folder of the test's own under the ignored .data.
  mkdirSync(path.join(repoRoot, '.data'), { recursive: true })
  const cwd = mkdtempSync(path.join(repoRoot, '.data', 'readme-'))
  t.teardown(() => { rmSync(cwd, { recursive: true, force: true }) })
  const trailer = 'echo; echo "ESP_VARS $(jq -nc --arg token "$TOKEN" --arg admin "$ADMIN_TOKEN" --arg device "$DEVICE" --arg deviceToken "$DEVICE_TOKEN" --arg import "$IMPORT" --arg kitchen "$KITCHEN" \'$ARGS.named\')"'
  const script = [PRELUDE, ...blocks.map(expectingStatus), trailer].join('\n')
  const run = await runBash(script, {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', H: base, MQTT_PORT: mqttPort, DATA_DIR: dataDir },
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
})
