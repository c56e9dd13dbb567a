import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { type Sql, trimOldest } from '@esp/db'
import { ApiError, type AuthThrottle, DeviceTokenGuesses, isActiveDeviceToken } from '@esp/domain'
import type { DatabaseHealth } from '@esp/http'
import { forwardingLogin, forwardingTokenOf } from './access.js'
import { parseDeviceTopic, subscriptionScope, topicOfRoutingKey } from './topics.js'

export interface BrokerAuthDeps {
  sql: Sql
  /** the server's count of failed credential checks, shared with HTTP logins */
  throttle: AuthThrottle
  now: () => Date
  log: FastifyBaseLogger
  health?: Pick<DatabaseHealth, 'note'> | undefined
  /** the broker's anonymous user (rabbitmq.conf `mqtt.default_user`): devices, with no claim to check */
  deviceUser: string
  /** the broker's own users (ingest's, from BROKER_AMQP_URLS): the broker checked them itself first */
  internalUsers: ReadonlySet<string>
}

/** Where the cluster's nodes ask (rabbitmq.conf `auth_http.*_path`); never routed by the proxy. */
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
 *   out for guessing device tokens;
 * - publish (topic write): only to the client's own device topics, under a token an active
 *   device has; anything else is refused at the edge and the broker closes the connection, so
 *   an unknown token never reaches the queue. A refused token counts as a guess of the address;
 * - subscribe (topic read): live readings and one's own forwarding topic, never device topics;
 * - queues and exchanges: the topic exchange and the client's own MQTT subscription queues only.
 * A device token's answer is remembered for a minute, and served past that while the database is
 * away: devices keep publishing into the queue, which holds their readings through the outage.
 */
export async function brokerAuthRoutes (app: FastifyInstance, deps: BrokerAuthDeps): Promise<void> {
  const guesses = new DeviceTokenGuesses(deps.throttle, () => deps.now().getTime())
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
      const active = await isActiveDeviceToken(deps.sql, token)
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
      const login = await forwardingLogin(deps.sql, deps.throttle.gate(`mqtt-client:${q.client_id ?? ''}`), username, password)
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
    const address = q.ip ?? 'unknown'
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
          const forwardingToken = await forwardingTokenOf(deps.sql, username)
          return answer(forwardingToken !== null && forwardingToken === scope.forwardingToken)
        }
      }
      return 'deny'
    } catch (err) {
      return failed(err)
    }
  })
}
