import mqtt, { type IClientOptions, type MqttClient } from 'mqtt'

interface Tap { teardown: (fn: () => unknown) => void }

/** An MQTT client closed with the test; reconnecting is off unless the test asks for it. */
export async function connectMqtt (t: Tap, url: string, options: IClientOptions = {}): Promise<MqttClient> {
  const client = await mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 5000, ...options })
  t.teardown(async () => { await client.endAsync(true) })
  return client
}

/** Messages arriving on a client, to wait for by count. */
export function collect (client: MqttClient): { messages: { topic: string, payload: string }[], waitFor: (count: number, timeoutMs?: number) => Promise<void> } {
  const messages: { topic: string, payload: string }[] = []
  client.on('message', (topic, payload) => { messages.push({ topic, payload: payload.toString('utf8') }) })
  return {
    messages,
    waitFor: async (count, timeoutMs = 5000) => { await until(() => messages.length >= count, timeoutMs, `${count} messages (got ${messages.length})`) }
  }
}

/** Polls a condition until it holds; fails the test with what it waited for. */
export async function until (check: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'a condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** The QoS the broker granted, or 128 when it refused (mqtt.js rejects the promise for a refusal). */
export async function subscribeGranted (client: MqttClient, topic: string): Promise<number | undefined> {
  try {
    return (await client.subscribeAsync(topic))[0]?.qos
  } catch (err) {
    const packet = (err as { packet?: { granted?: unknown[] } }).packet
    if (packet?.granted?.[0] === 128) return 128
    throw err
  }
}

/** A device publishing readings at QoS 1 without pause, until the broker closes its connection. */
export interface Publisher {
  /** the recorded_at of every message the broker acknowledged (PUBACK) */
  acked: string[]
  /** messages published so far */
  sent: () => number
  /** resolves once the connection is closed */
  closed: Promise<void>
}

/**
 * Keeps `window` QoS 1 readings in flight on the client's own device topic: each PUBACK sends the
 * next one. Message m is one reading of sensor 55 at `start` + m minutes, so what is stored can be
 * matched to what was acknowledged.
 */
export function publishReadings (client: MqttClient, token: string, options: { window: number, start: number, onAck?: () => void }): Publisher {
  const acked: string[] = []
  let sent = 0
  let open = true
  const closed = new Promise<void>((resolve) => { client.once('close', () => { open = false; resolve() }) })
  const next = (): void => {
    if (!open) return
    const m = sent++
    const at = new Date(options.start + m * 60_000).toISOString().replace('.000', '')
    const payload = JSON.stringify({ data: [{ recorded_at: at, sensors: [{ id: 55, value: m }] }] })
    client.publish(`device/sck/${token}/readings`, payload, { qos: 1 }, (err) => {
      if (err !== undefined && err !== null) return
      acked.push(at)
      options.onAck?.()
      next()
    })
  }
  for (let i = 0; i < options.window; i++) next()
  return { acked, sent: () => sent, closed }
}

/** A kit publishing QoS 1 readings at a steady pace, reconnecting by itself, for the broker fault tests. */
export interface PacedKit {
  token: string
  client: MqttClient
  /** message m: when it was published */
  published: number[]
  /** message m -> when its PUBACK came */
  acked: Map<number, number>
  /** stops publishing, waits for what is in flight to be acknowledged, disconnects */
  stop: () => Promise<void>
}

/**
 * Message m is one reading of sensor 55, value m, recorded at `start` + m minutes, so what is
 * stored can be matched to what was acknowledged. One message every `everyMs`, at most `inFlight`
 * unacknowledged; mqtt.js keeps an unacknowledged QoS 1 PUBLISH and sends it again after a
 * reconnect (to the next of `servers`, when several are given).
 */
export async function pacedKit (connect: string | IClientOptions, token: string, options: { everyMs: number, inFlight: number, start: number }): Promise<PacedKit> {
  const settings: IClientOptions = { clientId: token, reconnectPeriod: 250, connectTimeout: 5000 }
  const client = typeof connect === 'string' ? await mqtt.connectAsync(connect, settings) : await mqtt.connectAsync({ ...connect, ...settings })
  const published: number[] = []
  const acked = new Map<number, number>()
  const timer = setInterval(() => {
    if (published.length - acked.size >= options.inFlight) return
    const m = published.length
    published.push(Date.now())
    const at = new Date(options.start + m * 60_000).toISOString().replace('.000', '')
    client.publish(`device/sck/${token}/readings`, JSON.stringify({ data: [{ recorded_at: at, sensors: [{ id: 55, value: m }] }] }), { qos: 1 }, (err) => {
      if (err === undefined || err === null) acked.set(m, Date.now())
    })
  }, options.everyMs)
  return {
    token,
    client,
    published,
    acked,
    stop: async () => {
      clearInterval(timer)
      await until(() => acked.size === published.length, 30_000, `the PUBACKs of ${token}`).catch(() => {})
      await client.endAsync(true)
    }
  }
}
