/**
 * Every MQTT topic the platform reads or writes, and nothing else parses topics (STYLE.md §3.10).
 *
 * Devices publish under `device/sck/<token>/` (clients.md §1.2; behaviour.md §9.1, which also
 * accepts a `bridge/` root from bridged brokers). The platform publishes stored readings to
 * `devices/<device id>/readings` and, for forwarding devices, to
 * `/forward/<forwarding token>/device/<device id>/readings` (behaviour.md §9.4, leading slash).
 */
export type DeviceTopicKind = 'readings' | 'raw' | 'info' | 'hello'

export type DeviceTopic =
  | { kind: DeviceTopicKind, token: string }
  | { kind: 'inventory' }

/** What the platform subscribes to on an external broker (behaviour.md §9.1). */
export const DEVICE_TOPIC_FILTERS = [
  'device/sck/+/readings',
  'device/sck/+/readings/raw',
  'device/sck/+/info',
  'device/sck/+/hello',
  'device/inventory'
] as const

/**
 * RabbitMQ's MQTT plugin turns a topic into an AMQP routing key by swapping `/` and `.`
 * (rabbit_mqtt_util:mqtt_to_amqp); the swap is its own inverse.
 */
export const routingKeyOf = (topic: string): string => topic.replace(/[./]/g, (c) => c === '/' ? '.' : '/')
export const topicOfRoutingKey = routingKeyOf

/**
 * The device topic filters as bindings of the clustered broker's queue (`+` is AMQP's `*`), also
 * under `bridge/`, which parseDeviceTopic accepts: a publish the auth backend allows must reach
 * the queue, since the broker acknowledges a message that no binding takes and drops it.
 */
export const DEVICE_ROUTING_PATTERNS = DEVICE_TOPIC_FILTERS.flatMap((filter) => [filter, `bridge/${filter}`])
  .map((filter) => routingKeyOf(filter).replace(/\+/g, '*'))

const SUFFIXES: Record<string, DeviceTopicKind> = { readings: 'readings', 'readings/raw': 'raw', info: 'info', hello: 'hello' }
// A token is one topic level; the firmware's are 6 hex characters, older platforms' longer.
const TOKEN = /^[^/+#\s]{1,64}$/

export function parseDeviceTopic (topic: string): DeviceTopic | null {
  const path = topic.startsWith('bridge/') ? topic.slice('bridge/'.length) : topic
  if (path === 'device/inventory') return { kind: 'inventory' }
  if (!path.startsWith('device/sck/')) return null
  const rest = path.slice('device/sck/'.length)
  const slash = rest.indexOf('/')
  if (slash === -1) return null
  const token = rest.slice(0, slash)
  const kind = SUFFIXES[rest.slice(slash + 1)]
  return kind === undefined || !TOKEN.test(token) ? null : { kind, token }
}

export const liveTopic = (deviceId: number): string => `devices/${deviceId}/readings`
export const forwardTopic = (forwardingToken: string, deviceId: number): string => `/forward/${forwardingToken}/device/${deviceId}/readings`

/** The device id of a live readings topic, or null. */
export function parseLiveTopic (topic: string): number | null {
  const match = /^devices\/(\d{1,9})\/readings$/.exec(topic)
  return match === null ? null : Number(match[1])
}

/** The forwarding token of a forwarding topic, or null. */
export function parseForwardTopic (topic: string): string | null {
  const match = /^\/forward\/([^/+#]+)\/device\/\d{1,9}\/readings$/.exec(topic)
  return match?.[1] ?? null
}

export type SubscriptionScope =
  | { kind: 'live', deviceId: number | null }
  | { kind: 'forward', forwardingToken: string }
  | { kind: 'denied' }

/**
 * Which subscriptions make sense: live readings of one device or of all (`devices/+/readings`,
 * `devices/#`), and forwarding topics under one token. Device topics carry tokens and are never
 * readable; everything else is not this platform's.
 */
export function subscriptionScope (filter: string): SubscriptionScope {
  const one = parseLiveTopic(filter)
  if (one !== null) return { kind: 'live', deviceId: one }
  if (/^devices\/(\+|#)(\/readings|\/#)?$/.test(filter)) return { kind: 'live', deviceId: null }
  const forward = /^\/forward\/([^/+#]+)\/(#|device\/(\+|\d{1,9})\/(readings|#)|device\/#)$/.exec(filter)
  if (forward?.[1] !== undefined) return { kind: 'forward', forwardingToken: forward[1] }
  return { kind: 'denied' }
}
