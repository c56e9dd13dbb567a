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
