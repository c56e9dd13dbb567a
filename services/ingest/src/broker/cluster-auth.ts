import { isIP } from 'node:net'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from 'fastify'
import fp from 'fastify-plugin'
import { type Handle, trimOldest } from '@esp/db'
import { ApiError, type AuthThrottle, type DeviceTokenGuesses, errors, isActiveDeviceToken, safeEqual } from '@esp/domain'
import { type DatabaseHealth, errorHandlerPlugin, listenWithFallback } from '@esp/http'
import { forwardingLogin, forwardingTokenOf } from './access.js'
import { parseDeviceTopic, subscriptionScope, topicOfRoutingKey } from './topics.js'

export interface BrokerAuthDeps {
  database: Handle
  /** the server's count of failed credential checks, shared with HTTP logins */
  throttle: AuthThrottle
  /** guessed device tokens, counted with the embedded broker's and /add's */
  guesses: DeviceTokenGuesses
  now: () => Date
  log: FastifyBaseLogger
  health?: Pick<DatabaseHealth, 'note'> | undefined
  /** the broker's anonymous user (rabbitmq.conf `mqtt.default_user`): devices, with no claim to check */
  deviceUser: string
  /** the broker's own users (ingest's, from BROKER_AMQP_URLS): the broker checked them itself first */
  internalUsers: ReadonlySet<string>
  /** BROKER_AUTH_SECRET: when set, every check must carry it as the password of HTTP Basic credentials */
  secret?: string | undefined
}

/** Where the cluster's nodes ask (rabbitmq.conf `auth_http.*_path`), on the listener of its own below. */
export const BROKER_AUTH_PATH = '/broker/auth'

/** How many client ids' addresses are kept, to count a refused token against its address. */
const ADDRESSES_KEPT = 10_000
/** How long an answer on a device token is trusted; an older one serves only while the database is away. */
const TOKEN_FRESH_MS = 60_000
const TOKENS_KEPT = 200_000

type Query = Record<string, string | undefined>

/**
 * The clustered broker's HTTP auth backend (RabbitMQ `rabbitmq_auth_backend_http`, issue 24):
 * the embedded broker's policy (access.ts), asked by the broker instead. Devices log in as the
 * broker's anonymous user with their token as client id; ingest itself is a user of the broker's
 * own database, checked before this backend. The answers:
 * - login: refused for a forwarding username without its token (throttled as on HTTP), and for
 *   the broker's own users, whose password the broker already found wrong (so they cannot be
 *   guessed here unthrottled); allowed otherwise, since devices and live subscribers send no secret;
 * - connection (vhost, which names the client's address): refused while the address is locked
 *   out for guessing device tokens, and without an IP address to count against;
 * - publish (topic write): only to the client's own device topics, under a token an active
 *   device has; anything else is refused at the edge and the broker closes the connection, so
 *   an unknown token never reaches the queue. A refused token counts as a guess of the address;
 * - subscribe (topic read): live readings and one's own forwarding topic, never device topics;
 * - queues and exchanges: the topic exchange and the client's own MQTT subscription queues only.
 * A device token's answer is remembered for a minute, and served past that while the database is
 * away: devices keep publishing into the queue, which holds their readings through the outage.
 * Only the broker may ask (issue 34): the routes are served on a listener of their own
 * (brokerAuthListener), and with `secret` every request must carry it.
 */
export async function brokerAuthRoutes (app: FastifyInstance, deps: BrokerAuthDeps): Promise<void> {
  const guesses = deps.guesses
  const secret = deps.secret
  if (secret !== undefined) {
    // RabbitMQ sends the userinfo of its auth_http URLs as Basic credentials. A wrong secret is a
    // failed credential check of the caller's address (the socket's: nothing here is behind a
    // proxy); the right one is never refused, so the broker is not locked out by a neighbour.
    app.addHook('onRequest', async (request) => {
      const given = basicPassword(request)
      if (given !== null && safeEqual(given, secret)) return
      await deps.throttle.gate(request.socket.remoteAddress ?? 'unknown').verifyToken(async () => null)
      throw errors.unauthorized('The broker auth backend answers the broker only')
    })
  }
  // client id -> address, from the connection check: the publish check that follows does not
  // carry the address (RabbitMQ 3.10).
  const addresses = new Map<string, string>()
  const remember = (clientId: string, address: string): void => {
    addresses.delete(clientId)
    addresses.set(clientId, address)
    trimOldest(addresses, ADDRESSES_KEPT)
  }
  // What RabbitMQ 3.10 sends (GET query): each field a string; no route of the public contract.
  const fields = ['username', 'password', 'vhost', 'client_id', 'ip', 'tags', 'resource', 'name', 'permission', 'routing_key',
    'variable_map.client_id', 'variable_map.username', 'variable_map.vhost']
  const hidden = { hide: true, querystring: { type: 'object', properties: Object.fromEntries(fields.map((f) => [f, { type: 'string', maxLength: 1024 }])) } }
  // Every check comes from the broker's few addresses: a per-client request limit would refuse
  // the whole fleet. Guessed tokens and forwarding credentials have their own throttle (above).
  // Nor are they turned away under pressure or while the database is away: a refusal would drop
  // devices that the queue could hold for ingest, and most checks need no database.
  const route = { schema: hidden, config: { rateLimit: false, authenticate: false, ungated: true } } as const

  const tokens = new Map<string, { active: boolean, at: number }>()
  const activeToken = async (token: string): Promise<boolean> => {
    const known = tokens.get(token)
    const now = deps.now().getTime()
    if (known !== undefined && now - known.at < TOKEN_FRESH_MS) return known.active
    try {
      const active = await isActiveDeviceToken(deps.database, token)
      tokens.delete(token)
      tokens.set(token, { active, at: now })
      trimOldest(tokens, TOKENS_KEPT)
      return active
    } catch (err) {
      if (known === undefined) throw err
      deps.health?.note(err)
      return known.active
    }
  }

  const answer = (allowed: boolean): string => allowed ? 'allow' : 'deny'
  const failed = (err: unknown): string => {
    if (err instanceof ApiError && err.statusCode === 429) return 'deny'
    // A database away refuses rather than lets in: the broker retries the login later.
    if (deps.health?.note(err) !== true) deps.log.error({ err }, 'broker auth check failed')
    return 'deny'
  }

  app.get(`${BROKER_AUTH_PATH}/user`, route, async (request, reply) => {
    const q = request.query as Query
    void reply.type('text/plain')
    const username = q.username ?? ''
    const password = q.password ?? ''
    if (username === '' || username === deps.deviceUser) return 'allow'
    try {
      if (deps.internalUsers.has(username)) {
        // Counted as a failure of that account: its password is not guessed through MQTT.
        await deps.throttle.gate(`mqtt-client:${q.client_id ?? ''}`).verify(username, async () => null)
        return 'deny'
      }
      // No address comes with a login: the client id stands in for it, the account is counted.
      const login = await forwardingLogin(deps.database, deps.throttle.gate(`mqtt-client:${q.client_id ?? ''}`), username, password)
      // A forwarding username needs its token, even with no password: the subscribe check below
      // trusts the username. Any other name is a device's placeholder and no claim at all.
      return answer(login !== null)
    } catch (err) {
      return failed(err)
    }
  })

  app.get(`${BROKER_AUTH_PATH}/vhost`, route, async (request, reply) => {
    const q = request.query as Query
    void reply.type('text/plain')
    // The broker's word for the client's address (behind nginx, from the PROXY protocol); without
    // a real one there is nothing to count guesses against, so no connection.
    const address = q.ip ?? ''
    if (isIP(address) === 0) {
      deps.log.debug('broker connection refused: no client address')
      return 'deny'
    }
    if (q.client_id !== undefined) remember(q.client_id, address)
    if (guesses.locked(address)) {
      deps.log.info('broker connection refused: too many guessed device tokens from this address')
      return 'deny'
    }
    return 'allow'
  })

  app.get(`${BROKER_AUTH_PATH}/resource`, route, async (request, reply) => {
    const q = request.query as Query
    void reply.type('text/plain')
    // MQTT's own plumbing: publishing and binding through the topic exchange, and the client's
    // subscription queues (rabbit_mqtt names them mqtt-subscription-<client id>qos0|qos1).
    if (q.resource === 'exchange') return answer(q.name === 'amq.topic' && (q.permission === 'write' || q.permission === 'read'))
    if (q.resource === 'queue') return answer(q.client_id !== undefined && q.client_id !== '' && (q.name ?? '').startsWith(`mqtt-subscription-${q.client_id}qos`))
    return 'deny'
  })

  app.get(`${BROKER_AUTH_PATH}/topic`, route, async (request, reply) => {
    const q = request.query as Query
    void reply.type('text/plain')
    if (q.name !== 'amq.topic' || q.routing_key === undefined) return 'deny'
    const topic = topicOfRoutingKey(q.routing_key)
    const clientId = q['variable_map.client_id'] ?? ''
    const username = q.username ?? ''
    try {
      if (q.permission === 'write') {
        const device = parseDeviceTopic(topic)
        if (device === null) return 'deny'
        if (device.kind === 'inventory') return 'allow'
        // A token is the client id (the firmware), or the username (older clients).
        if (device.token !== clientId && device.token !== username) return 'deny'
        if (await activeToken(device.token)) return 'allow'
        const address = addresses.get(clientId)
        if (address !== undefined) {
          await guesses.failed(address, device.token).catch((err: unknown) => { deps.log.warn({ err }, 'a guessed device token was not counted') })
        }
        deps.log.debug('broker publish refused: no active device has the token')
        return 'deny'
      }
      if (q.permission === 'read') {
        const scope = subscriptionScope(topic.replace(/\*/g, '+'))
        if (scope.kind === 'live') return 'allow'
        if (scope.kind === 'forward') {
          // The login checked this username's token (above); the filter must name that token.
          const forwardingToken = await forwardingTokenOf(deps.database, username)
          return answer(forwardingToken !== null && forwardingToken === scope.forwardingToken)
        }
      }
      return 'deny'
    } catch (err) {
      return failed(err)
    }
  })
}

/** The password of HTTP Basic credentials, or null. */
function basicPassword (request: FastifyRequest): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(request.headers.authorization ?? '')
  if (match?.[1] === undefined) return null
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon === -1 ? null : decoded.slice(colon + 1)
}

export interface BrokerAuthListenOptions extends BrokerAuthDeps {
  /** BROKER_AUTH_HOST: loopback, or the address on the network the broker's nodes share */
  host: string
  /** BROKER_AUTH_PORT (0: any free port, for tests) */
  port: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /** where the broker's auth backend listens, once it does (clustered mode) */
    brokerAuthListening: { host: string, port: number } | undefined
  }
}

/**
 * The broker auth backend on a listener of its own (issue 34): never on the public port, where
 * anyone could ask it whether a token exists. It logs no request lines (each URL holds a client
 * id, a routing key and perhaps a password: device tokens), only what its checks log.
 */
export const brokerAuthListener = fp(async (app: FastifyInstance, options: BrokerAuthListenOptions) => {
  const { host, port, ...deps } = options
  const server = Fastify({
    loggerInstance: deps.log,
    logController: new LogController({ disableRequestLogging: true }),
    // The broker keeps its connections open; the requests are a few hundred bytes.
    bodyLimit: 1024,
    routerOptions: { ignoreTrailingSlash: true }
  })
  await server.register(errorHandlerPlugin)
  await server.register(brokerAuthRoutes, deps)
  app.decorate('brokerAuthListening', undefined)
  app.addHook('onReady', async () => {
    await server.ready()
    // A busy port is an error whatever set it: the broker's config names this port.
    const bound = await listenWithFallback(async (p) => {
      await server.listen({ host, port: p })
      const address = server.server.address()
      return typeof address === 'object' && address !== null ? address.port : p
    }, { port, explicit: true, name: 'broker auth', key: 'BROKER_AUTH_PORT' })
    app.brokerAuthListening = { host, port: bound.port }
  })
  app.addHook('onClose', async () => { await server.close() })
}, { name: 'esp-broker-auth' })
