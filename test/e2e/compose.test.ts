/**
 * infra/compose.yaml is copied into production as it is, so it is checked as such: against the
 * Compose Specification's JSON schema (the copy the npm package `dclint` ships), by
 * `docker-compose config` (Debian's docker-compose 1.29, which needs no Docker engine), and for
 * the rules that make it safe to run: state in volumes, no secret with a working default, shared
 * stores behind replicas, no anonymous MQTT broker, nothing internal behind the public proxy.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Ajv } from 'ajv'
import t from 'tap'
import { parse } from 'yaml'
import { repoRoot } from '@esp/test-helpers/process'

const infra = path.join(repoRoot, 'infra')
const composeFile = path.join(infra, 'compose.yaml')

/** Secrets compose must refuse to start without (docs/deployment.md, "Docker and compose"). */
const REQUIRED = ['POSTGRES_PASSWORD', 'JWT_SECRET', 'BROKER_USER', 'BROKER_PASSWORD', 'BROKER_AUTH_SECRET', 'RABBITMQ_ERLANG_COOKIE', 'TLS_CERT_DIR']

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type Env = Record<string, string>

interface Service {
  image?: string
  hostname?: string
  environment?: Record<string, string | number | boolean | null>
  volumes?: Array<string | { type?: string, source?: string, target?: string }>
  ports?: unknown[]
  deploy?: { replicas?: number | string }
  profiles?: string[]
}
interface Compose { services: Record<string, Service>, volumes?: Record<string, unknown> }

const certDir = mkdtempSync(path.join(tmpdir(), 'esp-compose-tls-'))
t.teardown(() => { rmSync(certDir, { recursive: true, force: true }) })
const TEST_ENV: Env = {
  POSTGRES_PASSWORD: 'pg-test-password',
  JWT_SECRET: 'test-jwt-secret-of-at-least-32-characters',
  BROKER_USER: 'esp-ingest',
  BROKER_PASSWORD: 'broker-test-password',
  BROKER_AUTH_SECRET: 'broker-auth-test-secret-0123',
  RABBITMQ_ERLANG_COOKIE: 'test-erlang-cookie-0123456789',
  TLS_CERT_DIR: certDir
}

/**
 * Compose's interpolation of one string (the forms docker-compose 1.29 knows): `$$`, `$VAR`,
 * `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`. Anything else is
 * an error here, so the file cannot drift into syntax the CI's docker-compose does not read.
 */
function interpolate (text: string, env: Env): string {
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c !== '$') { out += c; continue }
    const next = text[i + 1]
    if (next === '$') { out += '$'; i++; continue }
    if (next === '{') {
      const end = text.indexOf('}', i)
      if (end < 0) throw new Error(`unclosed \${ in ${text}`)
      const inner = text.slice(i + 2, end)
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])(.*))?$/s.exec(inner)
      if (m === null) throw new Error(`unsupported interpolation \${${inner}}`)
      const [, name = '', op, arg = ''] = m
      if (arg.includes('${')) throw new Error(`nested interpolation in \${${inner}}: docker-compose 1.29 does not read it`)
      const value = env[name]
      const unset = op?.startsWith(':') === true ? value === undefined || value === '' : value === undefined
      if (op === ':-' || op === '-') out += unset ? arg : value ?? ''
      else if (op === ':?' || op === '?') {
        if (unset) throw new Error(`required variable ${name} is missing a value: ${arg}`)
        out += value ?? ''
      } else out += value ?? ''
      i = end
      continue
    }
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1))
    if (m === null) throw new Error(`a lone $ in ${text} (write $$)`)
    out += env[m[0]] ?? ''
    i += m[0].length
  }
  return out
}

function interpolateAll (value: Json, env: Env): Json {
  if (typeof value === 'string') return interpolate(value, env)
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, env))
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, env)]))
  }
  return value
}

const raw = parse(readFileSync(composeFile, 'utf8'), { merge: true }) as Json
const compose = interpolateAll(raw, TEST_ENV) as unknown as Compose
const services = Object.entries(compose.services)

/** The schema file of the Compose Specification, as the pinned dclint release ships it. */
function composeSchemaValidator (): ReturnType<Ajv['compile']> {
  const require = createRequire(path.join(repoRoot, 'package.json'))
  const schema = JSON.parse(readFileSync(path.join(path.dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json'), 'utf8')) as { $schema: string, $id: string }
  const draft07 = JSON.parse(readFileSync(require.resolve('ajv/dist/refs/json-schema-draft-07.json'), 'utf8')) as object
  const ajv = new Ajv({ allErrors: true, allowUnionTypes: true, strictTypes: false })
  // The spec names draft-07 by its https address, which Ajv knows only as http.
  if (schema.$schema !== 'http://json-schema.org/draft-07/schema#') ajv.addMetaSchema({ ...draft07, $id: schema.$schema })
  return ajv.compile(schema)
}

function findExecutable (name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name)
    if (dir !== '' && existsSync(candidate)) return candidate
  }
  return undefined
}

interface Run { code: number | null, stdout: string, stderr: string }

/** `docker-compose config` with exactly these variables: no shell environment, no infra/.env. */
async function composeConfig (bin: string, env: Env): Promise<Run> {
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-compose-'))
  try {
    const envFile = path.join(dir, 'test.env')
    writeFileSync(envFile, Object.entries(env).map(([k, v]) => `${k}=${v}\n`).join(''))
    // Through `env -i`: compose lets the process environment override the .env file, and tap
    // adds NODE_OPTIONS to the environment of every process a test spawns.
    const child = spawn('env', ['-i', `PATH=${process.env.PATH ?? '/usr/bin:/bin'}`, `HOME=${dir}`, 'LANG=C.UTF-8', bin, '--env-file', envFile, '-f', composeFile, 'config'], {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString('utf8') })
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8') })
    const code = await new Promise<number | null>((resolve) => { child.on('close', resolve) })
    return { code, stdout, stderr }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const without = (name: string, value?: string): Env => {
  const env = { ...TEST_ENV }
  if (value === undefined) Reflect.deleteProperty(env, name)
  else env[name] = value
  return env
}

const envOf = (service: Service): Record<string, string> =>
  Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, v === null ? '' : String(v)]))

const replicasOf = (service: Service): number => Number(service.deploy?.replicas ?? 1)

/** Named volumes a service mounts, by target path (bind mounts and anonymous volumes left out). */
function namedVolumes (service: Service, declared: Set<string>): Map<string, string> {
  const found = new Map<string, string>()
  for (const volume of service.volumes ?? []) {
    const [source, target] = typeof volume === 'string' ? volume.split(':') : [volume.source, volume.target]
    if (source !== undefined && target !== undefined && declared.has(source)) found.set(target, source)
  }
  return found
}

/** Host files a service mounts from infra/, by target path. */
function boundFiles (service: Service): Map<string, string> {
  const found = new Map<string, string>()
  for (const volume of service.volumes ?? []) {
    if (typeof volume !== 'string') continue
    const [source = '', target = ''] = volume.split(':')
    if (source.startsWith('./')) found.set(target, path.join(infra, source))
  }
  return found
}

/** `key = value` lines of a RabbitMQ (sysctl-format) config file; later files win. */
function rabbitSettings (files: string[]): Map<string, string> {
  const settings = new Map<string, string>()
  for (const file of files) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const m = /^\s*([^#\s=][^=]*?)\s*=\s*(.*?)\s*$/.exec(line)
      if (m?.[1] !== undefined && m[2] !== undefined) settings.set(m[1], m[2])
    }
  }
  return settings
}

/** The bodies of the `name { ... }` blocks directly inside `text`. */
function blocks (text: string, name: RegExp): string[] {
  const found: string[] = []
  const re = new RegExp(`(^|[\\s;{}])${name.source}\\s*\\{`, 'g')
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    let depth = 1
    let i = m.index + m[0].length
    const start = i
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === '{') depth++
      else if (text[i] === '}') depth--
    }
    found.push(text.slice(start, i - 1))
    re.lastIndex = i
  }
  return found
}

t.test('the file is valid under the Compose Specification schema, as written and interpolated', async (t) => {
  const validate = composeSchemaValidator()
  t.notOk(validate({ services: { api: { imagee: 'x' } } }), 'the validator rejects an unknown service key (it is not a no-op)')
  t.ok(validate(raw), `as written: ${JSON.stringify(validate.errors)}`)
  t.ok(validate(compose), `interpolated with the test .env: ${JSON.stringify(validate.errors)}`)
})

t.test('docker-compose config accepts it with the required variables, and interpolates as this test does', async (t) => {
  const bin = findExecutable('docker-compose')
  if (bin === undefined) {
    t.fail('docker-compose is not installed (Debian: apt-get install docker-compose; .ci/run installs it)')
    return
  }
  const run = await composeConfig(bin, TEST_ENV)
  t.equal(run.code, 0, `docker-compose config exits 0: ${run.stderr}`)
  const resolved = parse(run.stdout) as Compose
  t.same(Object.keys(resolved.services ?? {}).sort(), Object.keys(compose.services).sort(), 'the same services')
  for (const [name, service] of services) {
    const theirs = resolved.services[name]
    t.same(theirs === undefined ? undefined : envOf(theirs), envOf(service), `${name}: the same environment`)
  }
})

t.test('compose refuses to start without each secret, or with it empty', async (t) => {
  const bin = findExecutable('docker-compose')
  if (bin === undefined) {
    t.fail('docker-compose is not installed (Debian: apt-get install docker-compose; .ci/run installs it)')
    return
  }
  for (const name of REQUIRED) {
    for (const env of [without(name), without(name, '')]) {
      const label = name in env ? `${name} empty` : `${name} unset`
      t.throws(() => interpolateAll(raw, env), new RegExp(`required variable ${name} `), `${label}: interpolation fails`)
      const run = await composeConfig(bin, env)
      t.not(run.code, 0, `${label}: docker-compose config fails`)
      t.match(run.stderr, `set ${name} in infra/.env`, `${label}: and says which variable`)
    }
  }
})

t.test('every service that keeps state keeps it in a named volume of its own', async (t) => {
  const declared = new Set(Object.keys(compose.volumes ?? {}))
  // Where each image keeps its state. A service of an image not listed here fails the test, so a
  // new service has to be placed in one of the two lists.
  const stateful: Array<[RegExp, string]> = [
    [/^timescale\/timescaledb:|^postgres:/, '/var/lib/postgresql/data'],
    [/^redis:/, '/data'],
    [/^rabbitmq:/, '/var/lib/rabbitmq'],
    [/^sensor-platform:/, '/data']
  ]
  const stateless = [/^nginx:/]
  const owners = new Map<string, string>()
  for (const [name, service] of services) {
    const image = service.image ?? ''
    const state = stateful.find(([re]) => re.test(image))
    if (state === undefined) {
      t.ok(stateless.some((re) => re.test(image)), `${name} (${image}) is known to keep no state`)
      continue
    }
    const volume = namedVolumes(service, declared).get(state[1])
    t.ok(volume, `${name} keeps ${state[1]} in a named volume`)
    if (volume === undefined || image.startsWith('sensor-platform:')) continue
    // The platform's replicas share platform-data on purpose; a database or a broker node never shares.
    t.equal(owners.get(volume), undefined, `${name}: ${volume} belongs to no other service`)
    owners.set(volume, name)
  }
  const nodes = services.filter(([, s]) => s.image?.startsWith('rabbitmq:') === true)
  t.equal(nodes.length, 3, 'three RabbitMQ nodes')
  for (const [name, service] of nodes) t.equal(service.hostname, name, `${name}: a stable hostname (its node name is rabbit@${name})`)
})

t.test('replicas share their stores: Redis behind several api, the broker cluster behind several ingest', async (t) => {
  const api = compose.services.api
  const ingest = compose.services.ingest
  if (api === undefined || ingest === undefined) { t.fail('api and ingest services'); return }
  t.ok(replicasOf(api) > 1 && replicasOf(ingest) > 1, 'several replicas of each by default')
  for (const [name, service] of services) {
    if (!(service.image ?? '').startsWith('sensor-platform:')) continue
    const env = envOf(service)
    if (replicasOf(service) > 1 || name === 'exporter') {
      t.match(env.REDIS_URL, /^redis:\/\/redis:6379/, `${name}: REDIS_URL points at the redis service`)
    }
  }
  const env = envOf(ingest)
  const urls = (env.BROKER_AMQP_URLS ?? '').split(',').filter((u) => u !== '')
  t.ok(replicasOf(ingest) <= 1 || urls.length > 0, 'ingest replicas > 1: BROKER_AMQP_URLS is set')
  t.equal(env.MQTT_BROKER_URL ?? '', '', 'MQTT_BROKER_URL is empty beside BROKER_AMQP_URLS')
  t.same(urls.map((u) => new URL(u).host).sort(), ['rabbitmq-1:5672', 'rabbitmq-2:5672', 'rabbitmq-3:5672'], 'every node of the cluster')
  for (const url of urls) t.equal(decodeURIComponent(new URL(url).username), TEST_ENV.BROKER_USER, 'ingest logs in as BROKER_USER')
  t.notOk(env.MQTT_PORT, 'ingest runs no MQTT listener of its own')
})

t.test('no MQTT broker lets anonymous clients read device topics', async (t) => {
  for (const [name, service] of services) {
    const image = service.image ?? ''
    if (/mosquitto|emqx|hivemq|vernemq|nanomq|nats/.test(image)) {
      t.fail(`${name} (${image}): a broker this test cannot vouch for; make it safe and teach the test`)
    }
    if (!image.startsWith('rabbitmq:')) continue
    const files = boundFiles(service)
    const main = files.get('/etc/rabbitmq/rabbitmq.conf')
    const plugins = files.get('/etc/rabbitmq/enabled_plugins')
    if (main === undefined || plugins === undefined) { t.fail(`${name}: rabbitmq.conf and enabled_plugins mounted from infra/`); continue }
    t.ok(service.volumes?.every((v) => typeof v !== 'string' || !v.startsWith('./') || v.endsWith(':ro')), `${name}: config files mounted read-only`)
    // RabbitMQ reads rabbitmq.conf, then conf.d/ in name order (the image's 10-defaults.conf first).
    const later = [...files].filter(([target]) => target.startsWith('/etc/rabbitmq/conf.d/')).sort(([a], [b]) => a.localeCompare(b)).map(([, file]) => file)
    const conf = rabbitSettings([main, ...later])
    const env = envOf(service)
    t.match(readFileSync(plugins, 'utf8'), /rabbitmq_mqtt/, `${name}: MQTT plugin`)
    t.match(readFileSync(plugins, 'utf8'), /rabbitmq_auth_backend_http/, `${name}: HTTP auth backend plugin`)
    t.equal(conf.get('loopback_users.guest'), 'true', `${name}: guest may not log in over the network`)
    t.ok(env.RABBITMQ_DEFAULT_USER !== undefined && env.RABBITMQ_DEFAULT_USER !== '' && env.RABBITMQ_DEFAULT_USER !== 'guest', `${name}: the default user is not guest`)
    t.not(env.RABBITMQ_DEFAULT_PASS ?? '', '', `${name}: the default user has a password`)
    t.ok(env.RABBITMQ_ERLANG_COOKIE !== undefined && env.RABBITMQ_ERLANG_COOKIE.length >= 20, `${name}: an Erlang cookie from configuration`)
    t.equal(conf.get('cluster_formation.peer_discovery_backend'), 'classic_config', `${name}: classic config peer discovery`)
    t.same([1, 2, 3].map((n) => conf.get(`cluster_formation.classic_config.nodes.${n}`)), ['rabbit@rabbitmq-1', 'rabbit@rabbitmq-2', 'rabbit@rabbitmq-3'], `${name}: the three nodes`)
    t.equal(conf.get('mqtt.listeners.tcp.default'), '1883', `${name}: MQTT on 1883`)
    if (conf.get('mqtt.allow_anonymous') === 'true') {
      // Anonymous devices log in as a user the internal database never holds, so every decision
      // about them (connect, publish, subscribe to device/...) is the HTTP backend's, ingest's.
      const user = conf.get('mqtt.default_user')
      t.ok(user !== undefined && user !== 'guest' && user !== env.RABBITMQ_DEFAULT_USER, `${name}: anonymous MQTT clients are neither guest nor the internal user`)
      t.equal(conf.get('auth_backends.1'), 'internal', `${name}: internal users first`)
      t.equal(conf.get('auth_backends.2'), 'http', `${name}: then ingest's HTTP backend`)
      t.equal(conf.get('auth_http.http_method'), 'get', `${name}: GET requests to it`)
      // Ingest's port of its own for them, never its public 3000; with the secret as userinfo,
      // which RabbitMQ sends as Basic credentials ($(...) is read from the node's environment).
      for (const kind of ['user', 'vhost', 'resource', 'topic']) {
        t.equal(conf.get(`auth_http.${kind}_path`), `http://broker:$(BROKER_AUTH_SECRET)@ingest:3001/broker/auth/${kind}`, `${name}: ${kind} decisions by ingest's auth listener`)
      }
      const ingest = envOf(compose.services.ingest ?? {})
      t.equal(env.BROKER_AUTH_SECRET, TEST_ENV.BROKER_AUTH_SECRET, `${name}: the auth backend's secret, from BROKER_AUTH_SECRET`)
      t.equal(ingest.BROKER_AUTH_SECRET, env.BROKER_AUTH_SECRET, `${name}: the one ingest asks for`)
      t.same([ingest.BROKER_AUTH_PORT, ingest.PORT], ['3001', '3000'], `${name}: ingest serves it on 3001, apart from its public port`)
    }
  }
})

t.test('only the proxy is published, with TLS, and never forwards ingest\'s broker auth routes', async (t) => {
  for (const [name, service] of services) {
    if (name !== 'proxy') t.same(service.ports ?? [], [], `${name} publishes no port`)
  }
  const proxy = compose.services.proxy
  const tls = (proxy?.volumes ?? []).find((v): v is string => typeof v === 'string' && v.endsWith(':/etc/nginx/tls:ro'))
  t.equal(tls?.split(':')[0], certDir, 'the certificate folder comes from TLS_CERT_DIR, read-only')
  const nginx = readFileSync(path.join(infra, 'nginx.conf'), 'utf8').replace(/#.*$/gm, '')
  const [http = ''] = blocks(nginx, /http/)
  const servers = blocks(http, /server/)
  t.ok(servers.length >= 2, 'HTTP and HTTPS servers')
  for (const server of servers) {
    const listen = /listen\s+([^;]+);/.exec(server)?.[1] ?? '?'
    t.match(server, /location ~ \^\(\/v0\)\?\/\+broker\(\/\|\$\) \{ return 404; \}/, `listen ${listen}: /broker/ is refused`)
    if (/\bssl\b/.test(listen)) {
      t.match(server, /ssl_certificate\s+\/etc\/nginx\/tls\/fullchain\.pem;/, `listen ${listen}: the certificate`)
      t.match(server, /ssl_certificate_key\s+\/etc\/nginx\/tls\/privkey\.pem;/, `listen ${listen}: its key`)
    } else {
      t.match(server, /location \/ \{ return 308 https:\/\/\$host\$request_uri; \}/, `listen ${listen}: everything else goes to HTTPS`)
    }
  }
  const [stream = ''] = blocks(nginx, /stream/)
  t.notMatch(nginx, /:3001\b/, "nothing is proxied to ingest's auth port")
  const upstreams = [...stream.matchAll(/server\s+([\w.-]+:\d+)/g)].map((m) => m[1])
  t.same(upstreams.sort(), ['rabbitmq-1:1883', 'rabbitmq-2:1883', 'rabbitmq-3:1883'], 'MQTT goes to the three RabbitMQ nodes, not to ingest')
  t.match(stream, /listen 8883 ssl;/, 'MQTT over TLS on 8883')
})

t.test('infra/.env.example names every variable the file reads, and as copied it starts nothing', async (t) => {
  const example = readFileSync(path.join(infra, '.env.example'), 'utf8')
  const listed = new Map([...example.matchAll(/^([A-Z][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']))
  const read = new Set([...readFileSync(composeFile, 'utf8').matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)].map((m) => m[1] ?? ''))
  t.same([...read].filter((name) => !listed.has(name)), [], 'every variable is listed')
  for (const name of REQUIRED) t.equal(listed.get(name) ?? '', name === 'BROKER_USER' ? 'esp-ingest' : '', `${name}: no value to copy`)
  t.throws(() => interpolateAll(raw, Object.fromEntries(listed)), /required variable/, 'the example as it is cannot be used')
})
