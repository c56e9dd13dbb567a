import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { freePort, portIsFree } from '@esp/db'

interface Tap { teardown: (fn: () => unknown) => void }

const run = promisify(execFile)
// Debian's rabbitmq-server package; the scripts here run the node as the calling user (the ones in
// /usr/sbin switch to the rabbitmq user, who could not enter the test's folders).
const BIN = '/usr/lib/rabbitmq/bin'

export interface RabbitNode {
  name: string
  amqpUrl: string
  mqttUrl: string
  /** kill -9 of the node's Erlang VM, as a crash */
  kill: () => Promise<void>
  /** starts it again with its data; resolves once it runs */
  start: () => Promise<void>
  running: () => boolean
}

export interface RabbitCluster {
  nodes: RabbitNode[]
  /** the user ingest logs in with (internal to the broker) */
  user: { name: string, password: string }
  /** rabbitmqctl against a running node */
  ctl: (...args: string[]) => Promise<string>
}

export interface RabbitClusterOptions {
  nodes?: number
  /** where the HTTP auth backend's four paths live: `${authUrl}/user` and so on (userinfo: the backend's secret) */
  authUrl: string
}

/**
 * A RabbitMQ cluster of the test's own (issue 24): each node with its own ports, data folder and
 * config, an Erlang port mapper on a free port of its own (never the machine's RabbitMQ, which is
 * a service), formed by classic-config peer discovery. Devices authenticate through the platform's
 * HTTP auth backend; the internal user is for ingest.
 */
export async function startRabbitCluster (t: Tap, options: RabbitClusterOptions): Promise<RabbitCluster> {
  if (!existsSync(path.join(BIN, 'rabbitmq-server'))) throw new Error('rabbitmq-server is not installed (Debian package rabbitmq-server)')
  const count = options.nodes ?? 3
  const dir = mkdtempSync(path.join(tmpdir(), 'esp-rabbit-'))
  const home = path.join(dir, 'home')
  mkdirSync(home)
  writeFileSync(path.join(home, '.erlang.cookie'), `ESPTEST${Date.now()}${Math.random().toString(36).slice(2)}`.toUpperCase(), { mode: 0o400 })
  writeFileSync(path.join(dir, 'enabled_plugins'), '[rabbitmq_mqtt,rabbitmq_auth_backend_http].\n')
  writeFileSync(path.join(dir, 'rabbitmq-env.conf'), '')
  const epmdPort = await freePort()
  const user = { name: 'esp-ingest', password: `pw-${Math.random().toString(36).slice(2)}` }
  interface Spec { i: number, name: string, amqp: number, mqtt: number, dist: number }
  const specs: Spec[] = []
  for (let i = 1; i <= count; i++) {
    specs.push({ i, name: `esp${i}@localhost`, amqp: await freePort(), mqtt: await freePort(), dist: await freePort() })
  }
  // The port mapper, as a child of the test's: a node would otherwise start one as a daemon that
  // outlives the test.
  const epmd = spawn('epmd', ['-port', String(epmdPort), '-address', '127.0.0.1'], { stdio: 'ignore' })
  for (const deadline = Date.now() + 10_000; await portIsFree(epmdPort, '127.0.0.1');) {
    if (Date.now() > deadline) throw new Error(`epmd did not listen on ${epmdPort}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const children = new Map<number, ChildProcess>()
  const envOf = (spec: Spec): NodeJS.ProcessEnv => ({
    PATH: `${BIN}:${process.env.PATH ?? ''}`,
    HOME: home,
    ERL_EPMD_PORT: String(epmdPort),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_CONF_ENV_FILE: path.join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_NODENAME: spec.name,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(spec.amqp),
    RABBITMQ_DIST_PORT: String(spec.dist),
    RABBITMQ_MNESIA_BASE: path.join(dir, `n${spec.i}`, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, `n${spec.i}`, 'log'),
    RABBITMQ_CONFIG_FILE: path.join(dir, `n${spec.i}.conf`),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_PID_FILE: path.join(dir, `n${spec.i}`, 'pid'),
    RABBITMQ_SERVER_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    LANG: 'C.UTF-8'
  })
  for (const spec of specs) {
    mkdirSync(path.join(dir, `n${spec.i}`, 'log'), { recursive: true })
    writeFileSync(path.join(dir, `n${spec.i}.conf`), [
      `listeners.tcp.default = 127.0.0.1:${spec.amqp}`,
      `mqtt.listeners.tcp.default = 127.0.0.1:${spec.mqtt}`,
      'mqtt.vhost = /',
      'mqtt.exchange = amq.topic',
      // Devices send only a client id: they log in as this user, whom only the platform knows.
      'mqtt.allow_anonymous = true',
      'mqtt.default_user = device',
      'mqtt.default_pass = device',
      'auth_backends.1 = internal',
      'auth_backends.2 = http',
      'auth_http.http_method = get',
      `auth_http.user_path = ${options.authUrl}/user`,
      `auth_http.vhost_path = ${options.authUrl}/vhost`,
      `auth_http.resource_path = ${options.authUrl}/resource`,
      `auth_http.topic_path = ${options.authUrl}/topic`,
      'cluster_formation.peer_discovery_backend = classic_config',
      ...specs.map((s) => `cluster_formation.classic_config.nodes.${s.i} = ${s.name}`),
      'log.console = false',
      'log.file.level = warning',
      ''
    ].join('\n'))
  }
  const ctlOn = async (spec: (typeof specs)[number], ...args: string[]): Promise<string> =>
    (await run(path.join(BIN, 'rabbitmqctl'), ['-n', spec.name, ...args], { env: envOf(spec), timeout: 120_000 })).stdout

  const startNode = async (spec: Spec): Promise<void> => {
    const child = spawn(path.join(BIN, 'rabbitmq-server'), [], { env: envOf(spec), stdio: 'ignore', detached: true })
    children.set(spec.i, child)
    await ctlOn(spec, 'wait', '--timeout', '120', path.join(dir, `n${spec.i}`, 'pid'))
    await ctlOn(spec, 'await_startup', '--timeout', '120')
  }
  const beamPid = (spec: Spec): number | undefined => {
    try { return Number(readFileSync(path.join(dir, `n${spec.i}`, 'pid'), 'utf8').trim()) } catch { return undefined }
  }
  const alive = (pid: number | undefined): boolean => {
    if (pid === undefined || Number.isNaN(pid)) return false
    try { process.kill(pid, 0); return true } catch { return false }
  }
  const killNode = async (spec: Spec): Promise<void> => {
    const pid = beamPid(spec)
    if (alive(pid)) process.kill(pid ?? 0, 'SIGKILL')
    const child = children.get(spec.i)
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      try { process.kill(-(child.pid ?? 0), 'SIGKILL') } catch {}
    }
    while (alive(pid)) await new Promise((resolve) => setTimeout(resolve, 50))
    rmSync(path.join(dir, `n${spec.i}`, 'pid'), { force: true })
  }

  t.teardown(async () => {
    await Promise.all(specs.map(async (spec) => { await killNode(spec) }))
    epmd.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  // One after another: each joins the nodes already running.
  for (const spec of specs) await startNode(spec)
  const first = specs[0]
  if (first === undefined) throw new Error('a cluster needs a node')
  await ctlOn(first, 'add_user', user.name, user.password)
  await ctlOn(first, 'set_permissions', '-p', '/', user.name, '.*', '.*', '.*')
  const running = await ctlOn(first, 'cluster_status', '--formatter', 'json')
  const members = (JSON.parse(running) as { running_nodes?: string[] }).running_nodes ?? []
  if (members.length !== count) throw new Error(`the cluster formed with ${members.length} of ${count} nodes: ${running}`)

  return {
    user,
    nodes: specs.map((spec) => ({
      name: spec.name,
      amqpUrl: `amqp://${user.name}:${user.password}@127.0.0.1:${spec.amqp}`,
      mqttUrl: `mqtt://127.0.0.1:${spec.mqtt}`,
      kill: async () => { await killNode(spec) },
      start: async () => { await startNode(spec) },
      running: () => alive(beamPid(spec))
    })),
    ctl: async (...args) => {
      const spec = specs.find((s) => alive(beamPid(s)))
      if (spec === undefined) throw new Error('no node runs')
      return await ctlOn(spec, ...args)
    }
  }
}

/**
 * A load balancer in front of the ingest instances' auth backend, as a deployment puts one (or
 * its replicas' service name) there: each request to the next instance, and to another when one
 * does not answer. With `secret` (BROKER_AUTH_SECRET) the URL it returns carries it as userinfo,
 * which RabbitMQ sends as Basic credentials, and the balancer passes them on.
 */
export async function authBalancer (t: Tap, bases: () => string[], secret?: string): Promise<string> {
  let next = 0
  const server = createServer((req, res) => {
    const targets = bases()
    const attempt = (left: number): void => {
      const base = targets[next++ % targets.length] ?? ''
      const headers = req.headers.authorization === undefined ? {} : { authorization: req.headers.authorization }
      const forward = httpRequest(`${base}${req.url ?? '/'}`, { method: 'GET', timeout: 5000, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'text/plain' })
        answer.pipe(res)
      })
      forward.on('error', () => { if (left > 1) attempt(left - 1); else { res.writeHead(502); res.end('deny') } })
      forward.end()
    }
    attempt(targets.length)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise((resolve) => server.close(resolve)) })
  return `http://${secret === undefined ? '' : `broker:${secret}@`}127.0.0.1:${(server.address() as AddressInfo).port}/broker/auth`
}

/** A BROKER_AUTH_SECRET for a test's cluster (URL-safe, as rabbitmq.conf's URLs need). */
export const brokerAuthSecret = (): string => `test-${randomBytes(16).toString('hex')}`
