import type { AuthenticateError, AuthErrorCode, Client, PublishPacket, Subscription, AedesPublishPacket } from 'aedes'
import type { FastifyBaseLogger } from 'fastify'
import { findDevicePrivacy, findForwardingUser, type ForwardingUserRow, type Handle } from '@esp/db'
import { ApiError, type Authenticator, type AuthThrottle, canManage, canSee, type CredentialGate, type DeviceTokenGuesses, safeEqual, type Viewer } from '@esp/domain'
import { type DeviceMessageDeps, handleDeviceMessage } from './device-messages.js'
import type { LiveFeed } from './live-feed.js'
import { parseDeviceTopic, parseForwardTopic, parseLiveTopic, subscriptionScope } from './topics.js'

/** Who a connection is: the device tokens it may publish for, and the user it proved to be, if any. */
interface Identity {
  tokens: Set<string>
  viewer: Viewer | null
  /** set when the client logged in with forwarding_username and forwarding_token */
  forwardingToken: string | null
}

export interface AccessDeps {
  database: Handle
  /** checks access tokens given as the MQTT password; null where the server has no auth */
  authenticator: Authenticator | null
  /** the server's count of failed credential checks, shared with HTTP logins */
  throttle: AuthThrottle
  /** guessed device tokens, counted with /add's unknown MAC addresses */
  guesses: DeviceTokenGuesses
  now: () => Date
  log: FastifyBaseLogger
  messages: DeviceMessageDeps
  feed: LiveFeed
}

const identities = new WeakMap<Client, Identity>()

function refusal (message: string, returnCode: AuthErrorCode): AuthenticateError {
  return Object.assign(new Error(message), { returnCode })
}

/** The client's address: the socket's, or for MQTT over WebSocket the upgrade request's. */
function addressOf (client: Client): string {
  const socket = client.req?.socket ?? client.conn
  return 'remoteAddress' in socket && typeof socket.remoteAddress === 'string' ? socket.remoteAddress : 'unknown'
}

/** The forwarding token of the user with this forwarding username, or null. */
export async function forwardingTokenOf (h: Handle, username: string): Promise<string | null> {
  return (await findForwardingUser(h, username))?.forwarding_token ?? null
}

/**
 * Forwarding credentials (behaviour.md §9.4): `not_forwarding` when the username is no user's
 * forwarding username, null when the token is wrong, counted by the throttle either way. One home
 * for the check, shared by the embedded broker and the clustered broker's auth backend.
 */
export async function forwardingLogin (h: Handle, gate: CredentialGate, username: string, password: string): Promise<{ viewer: Viewer, forwardingToken: string } | null | 'not_forwarding'> {
  const forwarding: ForwardingUserRow | undefined = await findForwardingUser(h, username)
  if (forwarding === undefined) return 'not_forwarding'
  const proved = await gate.verify(username, async () => forwarding.forwarding_token !== null && safeEqual(forwarding.forwarding_token, password) ? true : null)
  return proved === null ? null : { viewer: { id: forwarding.id, username: forwarding.username, role: forwarding.role }, forwardingToken: password }
}

/**
 * A user proved by forwarding credentials, or by an access token as the password. Both pass the
 * throttle, which refuses a locked-out caller before the secret is compared: forwarding
 * credentials count for the address and the forwarding username, a token (which names no
 * account) for the address. Anything else (a device's placeholder `user`/`password`, its token as
 * the username) is no attempt at a user's secret, so it is neither counted nor refused.
 */
async function userOf (deps: AccessDeps, address: string, username: string, password: string): Promise<{ viewer: Viewer, forwardingToken: string | null } | null> {
  const gate = deps.throttle.gate(address)
  const forwarding = await forwardingLogin(deps.database, gate, username, password)
  if (forwarding !== 'not_forwarding') return forwarding
  const authenticator = deps.authenticator
  if (authenticator === null || password.split('.').length !== 3) return null
  // The HTTP side's check: the same prepared statement, remembered tokens and revocations.
  const viewer = await authenticator.token(gate, password)
  return viewer === null ? null : { viewer, forwardingToken: null }
}

/**
 * The broker's policy (aedes handlers; issue #6 §2, clients.md §4.37). CONNECT is never refused
 * for its credentials: the firmware sends only its token as client id, the 2016 prototype sent
 * `user`/`password`, and live subscribers are anonymous. A token may also come as the username.
 * Credentials that prove a user (forwarding credentials, an access token) widen what the client
 * may subscribe to; anything else is simply not a user. The one refusal: a caller locked out by
 * too many failed checks gets CONNACK 5 "not authorized" (MQTT 3.1.1 §3.2.2.3). Not 3 "server
 * unavailable": the server is up and it is this caller that is refused, and clients read 3 as
 * an outage to retry at once; not 4 "bad username or password", which would be a lie to the
 * holder of the right ones. 3.1.1 has no Retry-After; the lock's length is the HTTP side's.
 */
export function installAccess (broker: {
  authenticate: (client: Client, username: Readonly<string | undefined>, password: Readonly<Buffer | undefined>, done: (error: AuthenticateError | null, success: boolean | null) => void) => void
  authorizePublish: (client: Client | null, packet: PublishPacket, callback: (error?: Error | null) => void) => void
  authorizeSubscribe: (client: Client, subscription: Subscription, callback: (error: Error | null, subscription?: Subscription | null) => void) => void
  authorizeForward: (client: Client, packet: AedesPublishPacket) => AedesPublishPacket | null | undefined | void
}, deps: AccessDeps): void {
  const guesses = deps.guesses
  broker.authenticate = (client, username, password, done) => {
    const tokens = new Set([client.id])
    if (username !== undefined && username !== '') tokens.add(username)
    const identity: Identity = { tokens, viewer: null, forwardingToken: null }
    const secret = password?.toString('utf8') ?? ''
    if (username === undefined || secret === '') {
      identities.set(client, identity)
      done(null, true)
      return
    }
    userOf(deps, addressOf(client), username, secret).then((user) => {
      if (user !== null) { identity.viewer = user.viewer; identity.forwardingToken = user.forwardingToken }
      identities.set(client, identity)
      done(null, true)
    }, (err: unknown) => {
      if (err instanceof ApiError && err.statusCode === 429) {
        deps.log.info('mqtt connect refused: too many failed credential checks')
        done(refusal('not authorized: too many failed attempts, retry later', 5), false)
        return
      }
      if (deps.messages.health?.note(err) === true) deps.log.warn({ err: { message: deps.messages.health.reason } }, 'mqtt connect refused: the database is unavailable')
      else deps.log.error({ err }, 'mqtt authentication failed')
      done(refusal('server unavailable', 3), false)
    })
  }

  broker.authorizePublish = (client, packet, callback) => {
    // The platform's own publishes (live readings) come without a client.
    if (client === null) { callback(null); return }
    const topic = parseDeviceTopic(packet.topic)
    const identity = identities.get(client)
    if (topic === null || identity === undefined || (topic.kind !== 'inventory' && !identity.tokens.has(topic.token))) {
      // Refusing closes the connection (aedes): a client publishing outside its own topics is not a device.
      deps.log.debug({ kind: topic?.kind ?? 'other' }, 'mqtt publish refused')
      callback(new Error('publishing is allowed only to your own device topics'))
      return
    }
    const address = addressOf(client)
    if (topic.kind !== 'inventory' && guesses.locked(address)) {
      deps.log.info('mqtt publish refused: too many guessed device tokens from this address')
      callback(new Error('too many publishes under unknown device tokens, retry later'))
      return
    }
    // Device payloads are never kept for later subscribers.
    packet.retain = false
    // The acknowledgement (PUBACK at QoS 1) is sent when this calls back, so only after the commit;
    // when the database fails the error closes the connection and the device sends again.
    handleDeviceMessage(deps.messages, topic, packet.payload as Buffer).then(async (outcome) => {
      if (outcome === 'unknown_device' && topic.kind !== 'inventory') {
        // A throttle store that cannot count (Redis away) does not stop the acknowledgement.
        await guesses.failed(address, topic.token).catch((err: unknown) => { deps.log.warn({ err }, 'a guessed device token was not counted') })
      }
      callback(null)
    }, (err: unknown) => {
      deps.log.warn({ err }, 'mqtt message not stored; the connection is closed so the device sends it again')
      callback(err instanceof Error ? err : new Error('not stored'))
    })
  }

  broker.authorizeSubscribe = (client, subscription, callback) => {
    const scope = subscriptionScope(subscription.topic)
    const identity = identities.get(client)
    const viewer = identity?.viewer ?? null
    const deny = (): void => { callback(null, null) }
    if (scope.kind === 'denied') { deny(); return }
    if (scope.kind === 'forward') {
      if (identity?.forwardingToken === scope.forwardingToken) callback(null, subscription)
      else deny()
      return
    }
    if (scope.deviceId === null) { callback(null, subscription); return }
    findDevicePrivacy(deps.database, scope.deviceId).then((device) => {
      if (device === undefined) { deny(); return }
      if (!canSee(viewer, { ownerId: device.owner_id, isPrivate: device.is_private })) { deny(); return }
      callback(null, subscription)
    }, (err: unknown) => { callback(err instanceof Error ? err : new Error('subscription failed')) })
  }

  // The last word on every delivery, whatever filter matched: device topics reach nobody, a private
  // device's readings reach its owner and admins, forwarding topics their own user.
  broker.authorizeForward = (client, packet) => {
    const deviceId = parseLiveTopic(packet.topic)
    const identity = identities.get(client)
    if (deviceId !== null) {
      const owner = deps.feed.privateOwner(deviceId)
      if (owner === undefined) return packet
      return canManage(identity?.viewer ?? null, { ownerId: owner }) ? packet : null
    }
    const forwardingToken = parseForwardTopic(packet.topic)
    if (forwardingToken !== null) return identity?.forwardingToken === forwardingToken ? packet : null
    return null
  }
}
