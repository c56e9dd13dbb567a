import net from 'node:net'

/**
 * The SCK 2.x firmware's MQTT client, byte for byte (clients.md §1.1): PubSubClient 2.8 speaks
 * MQTT 3.1.1, connects with the device token as client id, no username, password or will, a clean
 * session and a keep-alive of 120 s, publishes at QoS 0 without retain, never subscribes, and never
 * calls loop(), so it sends no PINGREQ and reads nothing. Packets are built here by hand so that
 * nothing a client library adds or fixes stands between the test and the broker.
 */

function remainingLength (length: number): Buffer {
  const bytes: number[] = []
  do {
    let byte = length % 128
    length = Math.floor(length / 128)
    if (length > 0) byte |= 0x80
    bytes.push(byte)
  } while (length > 0)
  return Buffer.from(bytes)
}

const mqttString = (text: string | Buffer): Buffer => {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
  const length = Buffer.alloc(2)
  length.writeUInt16BE(bytes.length)
  return Buffer.concat([length, bytes])
}

const packet = (first: number, body: Buffer): Buffer => Buffer.concat([Buffer.from([first]), remainingLength(body.length), body])

export interface ConnectOptions {
  clientId: string
  username?: string
  password?: string
  keepAlive?: number
  cleanSession?: boolean
}

/** CONNECT, MQTT 3.1.1 (protocol level 4), as PubSubClient::connect(id) writes it. */
export function connectPacket (options: ConnectOptions): Buffer {
  let flags = options.cleanSession === false ? 0 : 0x02
  if (options.username !== undefined) flags |= 0x80
  if (options.password !== undefined) flags |= 0x40
  const keepAlive = Buffer.alloc(2)
  keepAlive.writeUInt16BE(options.keepAlive ?? 120)
  const variable = Buffer.concat([mqttString('MQTT'), Buffer.from([4, flags]), keepAlive])
  const payload = [mqttString(options.clientId)]
  if (options.username !== undefined) payload.push(mqttString(options.username))
  if (options.password !== undefined) payload.push(mqttString(options.password))
  return packet(0x10, Buffer.concat([variable, ...payload]))
}

/** PUBLISH without retain: QoS 0 as the firmware sends it, or QoS 1 with a packet id. */
export function publishPacket (topic: string, payload: string | Buffer, qos: 0 | 1 = 0, packetId = 1): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload
  if (qos === 0) return packet(0x30, Buffer.concat([mqttString(topic), body]))
  const id = Buffer.alloc(2)
  id.writeUInt16BE(packetId)
  return packet(0x32, Buffer.concat([mqttString(topic), id, body]))
}

export const DISCONNECT = Buffer.from([0xe0, 0x00])

/** Packet type numbers (MQTT 3.1.1 §2.2.1). */
export const PacketType = { CONNACK: 2, PUBLISH: 3, PUBACK: 4, PINGRESP: 13 } as const

/** Every connection still open, so that a failed test leaves none behind (closeAll in a teardown). */
const open = new Set<net.Socket>()
export function closeAll (): void {
  for (const socket of open) socket.destroy()
  open.clear()
}

export interface Received { type: number, flags: number, body: Buffer }

/** A TCP connection carrying hand-built packets; what the broker sends back is kept, packet by packet. */
export class RawMqtt {
  readonly received: Received[] = []
  closed = false
  private buffer = Buffer.alloc(0)
  private readonly waiters = new Set<() => void>()

  private constructor (readonly socket: net.Socket) {
    open.add(socket)
    socket.on('data', (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk])
      this.parse()
      this.wake()
    })
    socket.on('close', () => { this.closed = true; open.delete(socket); this.wake() })
    socket.on('error', () => { this.closed = true; this.wake() })
  }

  static async open (port: number, host = '127.0.0.1'): Promise<RawMqtt> {
    const socket = net.connect(port, host)
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    socket.setNoDelay(true)
    return new RawMqtt(socket)
  }

  /** Opens a connection, sends CONNECT and waits for the CONNACK; answers its return code. */
  static async connect (port: number, options: ConnectOptions): Promise<{ kit: RawMqtt, returnCode: number }> {
    const kit = await RawMqtt.open(port)
    kit.write(connectPacket(options))
    const connack = await kit.next(PacketType.CONNACK)
    return { kit, returnCode: connack.body[1] ?? -1 }
  }

  write (bytes: Buffer): void {
    this.socket.write(bytes)
  }

  publish (topic: string, payload: string | Buffer): void {
    this.write(publishPacket(topic, payload, 0))
  }

  /** QoS 1 (documented; the 2016 prototype used it): resolves on the PUBACK of this packet id. */
  async publishQos1 (topic: string, payload: string | Buffer, packetId: number): Promise<void> {
    this.write(publishPacket(topic, payload, 1, packetId))
    await this.next(PacketType.PUBACK, (p) => p.body.readUInt16BE(0) === packetId)
  }

  /** The first received packet of the type (that the test accepts), waiting up to timeoutMs. */
  async next (type: number, accept: (p: Received) => boolean = () => true, timeoutMs = 15_000): Promise<Received> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = this.received.find((p) => p.type === type && accept(p))
      if (found !== undefined) return found
      if (this.closed) throw new Error(`the broker closed the connection before a packet of type ${type}`)
      if (Date.now() > deadline) throw new Error(`no packet of type ${type} within ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const wake = (): void => { clearTimeout(timer); this.waiters.delete(wake); resolve() }
        const timer = setTimeout(wake, Math.max(1, deadline - Date.now()))
        this.waiters.add(wake)
      })
    }
  }

  /** PINGREQ, to see afterwards that a connection is still served (the firmware itself never sends one). */
  async ping (): Promise<void> {
    this.write(Buffer.from([0xc0, 0x00]))
    await this.next(PacketType.PINGRESP)
  }

  /**
   * Ends the connection as the firmware does when the SAM powers the ESP off after a cycle: no
   * DISCONNECT. What was written is flushed first (the firmware's bytes left the chip before it
   * went dark), so the broker sees every PUBLISH and then the connection end without a goodbye.
   */
  drop (): void {
    this.socket.end()
  }

  /** Closes with a DISCONNECT first, as PubSubClient::disconnect() does. */
  async end (): Promise<void> {
    if (!this.closed) this.socket.end(DISCONNECT)
    await new Promise<void>((resolve) => { if (this.closed) resolve(); else this.socket.once('close', () => { resolve() }) })
  }

  private wake (): void {
    for (const waiter of [...this.waiters]) waiter()
  }

  private parse (): void {
    for (;;) {
      if (this.buffer.length < 2) return
      let multiplier = 1
      let length = 0
      let at = 1
      let byte: number
      do {
        if (at >= this.buffer.length) return
        byte = this.buffer[at++] as number
        length += (byte & 0x7f) * multiplier
        multiplier *= 128
      } while ((byte & 0x80) !== 0)
      if (this.buffer.length < at + length) return
      const first = this.buffer[0] as number
      this.received.push({ type: first >> 4, flags: first & 0x0f, body: this.buffer.subarray(at, at + length) })
      this.buffer = this.buffer.subarray(at + length)
    }
  }
}
