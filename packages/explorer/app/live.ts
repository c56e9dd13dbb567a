import { config } from './config.js'

/**
 * Live readings of one device: an MQTT 3.1.1 subscription to `devices/<id>/readings` over the
 * platform's WebSocket endpoint. The explorer only subscribes at QoS 0, so it needs four packets
 * (CONNECT, SUBSCRIBE, PINGREQ out; PUBLISH in); a general MQTT client would be most of the page's
 * weight. A signed-in owner connects with the access token as password and so also hears a
 * private device (the broker's rules).
 */
export interface LiveReadings { device_id: number, data: { recorded_at: string, sensors: { id: number, value: number | null, raw_value: number | null }[] }[] }

const KEEPALIVE_SECONDS = 30
const encoder = new TextEncoder()
const decoder = new TextDecoder()

function remainingLength (n: number): number[] {
  const bytes: number[] = []
  do {
    let byte = n % 128
    n = Math.floor(n / 128)
    if (n > 0) byte |= 0x80
    bytes.push(byte)
  } while (n > 0)
  return bytes
}

const mqttString = (text: string): number[] => {
  const bytes = encoder.encode(text)
  return [bytes.length >> 8, bytes.length & 0xff, ...bytes]
}

const packet = (type: number, body: number[]): Uint8Array => new Uint8Array([type, ...remainingLength(body.length), ...body])

function connectPacket (clientId: string, password: string | null): Uint8Array {
  const flags = 0x02 | (password !== null ? 0xc0 : 0)
  const body = [...mqttString('MQTT'), 4, flags, 0, KEEPALIVE_SECONDS, ...mqttString(clientId)]
  if (password !== null) body.push(...mqttString('explorer'), ...mqttString(password))
  return packet(0x10, body)
}

const subscribePacket = (topic: string): Uint8Array => packet(0x82, [0, 1, ...mqttString(topic), 0])

/** Splits the stream into packets; a WebSocket message may hold part of one or several. */
function * packets (buffer: { bytes: Uint8Array }): Generator<{ type: number, flags: number, body: Uint8Array }> {
  for (;;) {
    const bytes = buffer.bytes
    let length = 0
    let multiplier = 1
    let at = 1
    for (;;) {
      if (at >= bytes.length) return
      const byte = bytes[at++] ?? 0
      length += (byte & 0x7f) * multiplier
      multiplier *= 128
      if ((byte & 0x80) === 0) break
      if (at > 4) throw new Error('malformed MQTT packet')
    }
    if (bytes.length < at + length) return
    const first = bytes[0] ?? 0
    yield { type: first >> 4, flags: first & 0x0f, body: bytes.subarray(at, at + length) }
    buffer.bytes = bytes.subarray(at + length)
  }
}

export function subscribeLive (deviceId: number, password: string | null, onReadings: (readings: LiveReadings) => void, onState: (connected: boolean) => void): () => void {
  let socket: WebSocket | null = null
  let closed = false
  let retryMs = 1000
  let ping: ReturnType<typeof setInterval> | undefined
  let reconnect: ReturnType<typeof setTimeout> | undefined
  const topic = `devices/${deviceId}/readings`

  const open = (): void => {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
    const ws = new WebSocket(`${scheme}://${location.host}${config.mqttPath}`, 'mqtt')
    socket = ws
    ws.binaryType = 'arraybuffer'
    const buffer = { bytes: new Uint8Array(0) }
    ws.onopen = () => {
      ws.send(connectPacket(`explorer-${Math.random().toString(36).slice(2, 12)}`, password))
    }
    ws.onmessage = (event: MessageEvent<ArrayBuffer>) => {
      const incoming = new Uint8Array(event.data)
      const joined = new Uint8Array(buffer.bytes.length + incoming.length)
      joined.set(buffer.bytes)
      joined.set(incoming, buffer.bytes.length)
      buffer.bytes = joined
      for (const { type, flags, body } of packets(buffer)) {
        if (type === 2) { // CONNACK
          if (body[1] !== 0) { ws.close(); return }
          ws.send(subscribePacket(topic))
          ping = setInterval(() => { ws.send(new Uint8Array([0xc0, 0])) }, KEEPALIVE_SECONDS * 750)
          retryMs = 1000
          onState(true)
        } else if (type === 3) { // PUBLISH
          const topicLength = ((body[0] ?? 0) << 8) | (body[1] ?? 0)
          const payloadAt = 2 + topicLength + (((flags >> 1) & 3) > 0 ? 2 : 0)
          try {
            onReadings(JSON.parse(decoder.decode(body.subarray(payloadAt))) as LiveReadings)
          } catch { /* not readings: nothing to show */ }
        }
      }
    }
    ws.onclose = () => {
      clearInterval(ping)
      onState(false)
      if (closed) return
      reconnect = setTimeout(open, retryMs)
      retryMs = Math.min(retryMs * 2, 30_000)
    }
  }
  open()
  return () => {
    closed = true
    clearTimeout(reconnect)
    clearInterval(ping)
    socket?.close()
  }
}
