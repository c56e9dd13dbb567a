/**
 * `pnpm simulate --url mqtt://127.0.0.1:1883 --tokens 3f9a1c,3f9a1d [--cycles 10] [--interval 5]
 * [--per-cycle 3] [--qos 0] [--latitude 41.39 --longitude 2.16]`: Smart Citizen Kits as their
 * firmware behaves (clients.md §1): the token is the client id and there are no credentials; every
 * publish cycle opens a new clean session, sends `hello` and `info` on the first cycle, then one
 * `readings/raw` message per reading time, back to back, at QoS 0, and disconnects without waiting
 * for anything. The set of sensors changes from one reading to the next as the firmware's (RSSI
 * every 3rd, PMS every 5th). Values are what a kit at the place would read then
 * (scripts/sensor-values.ts; the walkthrough's balcony in Barcelona unless told), each kit's weather its own.
 */
import { parseArgs } from 'node:util'
import mqtt from 'mqtt'
import { BALCONY, firmwareText, seedOf, sensorValue } from './sensor-values.js'

const BASE = [10, 221]
const URBAN = [14, 55, 56, 53, 58, 113, 112]
const PMS = [89, 87, 88, 165, 166, 167, 168, 169, 170]

export interface SimulatedReading { token: string, recordedAt: string, sensors: { id: number, value: number }[] }

/** The firmware's `t:` timestamp: UTC, whole seconds (clients.md §1.3.1). */
const firmwareTime = (ms: number): string => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')

export interface Place { latitude: number, longitude: number }

/**
 * The sensors of the n-th reading of a kit (the kit-th of a run) at a place, with the values a kit
 * there would read at that time; a test computes the same from the same arguments.
 */
export function kitReading (token: string, kit: number, n: number, at: number, place: Place = BALCONY): SimulatedReading {
  const ids = [...BASE, ...(n % 3 === 0 ? [220] : []), ...URBAN, ...(n % 5 === 0 ? PMS : [])]
  const site = { ...place, seed: seedOf(`${token}/${kit}`) }
  const recordedAt = firmwareTime(at)
  return { token, recordedAt, sensors: ids.map((id) => ({ id, value: sensorValue(id, Date.parse(recordedAt), site) })) }
}

/** `_formatNET`: no quotes, no spaces, each sensor's value with the digits the firmware prints. */
export function rawPayload (reading: SimulatedReading): string {
  return `{t:${reading.recordedAt},${reading.sensors.map((s) => `${s.id}:${firmwareText(s.id, s.value)}`).join(',')}}`
}

export function infoPayload (token: string, at: number): string {
  return JSON.stringify({
    time: firmwareTime(at),
    hw_ver: '2.3',
    id: `A1B2C3D4504E4B4B372E314AFF${token.toUpperCase()}`,
    sam_ver: '0.9.11-910fb56-master-sck23_air',
    sam_bd: '2026-02-10T11:42:07Z',
    mac: 'not synced',
    esp_ver: '0.9.9-910fb56-master',
    esp_bd: '2026-02-10T11:40:55Z',
    rcause: 'POR'
  })
}

export interface SimulationOptions {
  url: string
  tokens: string[]
  cycles: number
  /** pause between publish cycles (the firmware's default is 180 s) */
  intervalMs: number
  /** readings per cycle, one minute apart (publish every 180 s, read every 60 s) */
  perCycle: number
  qos: 0 | 1
  /** the time of the first reading */
  start: number
  /** where the kits are (their local time and season); the walkthrough's balcony in Barcelona by default */
  place?: Place
  onReading?: (reading: SimulatedReading) => void
}

async function cycle (options: SimulationOptions, token: string, kit: number, c: number): Promise<void> {
  // PubSubClient's one-argument connect: client id only, clean session, keep-alive 120 s.
  const client = await mqtt.connectAsync(options.url, { clientId: token, clean: true, keepalive: 120, reconnectPeriod: 0, connectTimeout: 10_000 })
  try {
    const sends: Promise<unknown>[] = []
    if (c === 0) {
      sends.push(client.publishAsync(`device/sck/${token}/hello`, `${token}:Hello`, { qos: options.qos }))
      sends.push(client.publishAsync(`device/sck/${token}/info`, infoPayload(token, options.start), { qos: options.qos }))
    }
    for (let i = 0; i < options.perCycle; i++) {
      const n = c * options.perCycle + i
      const reading = kitReading(token, kit, n, options.start + n * 60_000, options.place)
      sends.push(client.publishAsync(`device/sck/${token}/readings/raw`, rawPayload(reading), { qos: options.qos }))
      options.onReading?.(reading)
    }
    await Promise.all(sends)
  } finally {
    // The kit powers its Wi-Fi down: a clean DISCONNECT after the bytes are written.
    await client.endAsync()
  }
}

/** Runs every kit for the given cycles; resolves when the last cycle has disconnected. */
export async function simulateKits (options: SimulationOptions): Promise<void> {
  await Promise.all(options.tokens.map(async (token, kit) => {
    for (let c = 0; c < options.cycles; c++) {
      if (c > 0) await new Promise((resolve) => setTimeout(resolve, options.intervalMs))
      await cycle(options, token, kit, c)
    }
  }))
}

if (import.meta.filename === process.argv[1]) {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: 'mqtt://127.0.0.1:1883' },
      tokens: { type: 'string' },
      cycles: { type: 'string', default: '10' },
      interval: { type: 'string', default: '5' },
      'per-cycle': { type: 'string', default: '3' },
      qos: { type: 'string', default: '0' },
      latitude: { type: 'string', default: String(BALCONY.latitude) },
      longitude: { type: 'string', default: String(BALCONY.longitude) }
    }
  })
  const tokens = (values.tokens ?? '').split(',').filter((token) => token !== '')
  const place = { latitude: Number(values.latitude), longitude: Number(values.longitude) }
  if (tokens.length === 0 || !(Math.abs(place.latitude) <= 90 && Math.abs(place.longitude) <= 180)) {
    console.error('usage: pnpm simulate --url mqtt://host:port --tokens <token>[,<token>...] [--cycles 10] [--interval 5] [--per-cycle 3] [--qos 0|1] [--latitude 41.39 --longitude 2.16]')
    process.exit(2)
  }
  let sent = 0
  await simulateKits({
    url: values.url,
    tokens,
    cycles: Number(values.cycles),
    intervalMs: Number(values.interval) * 1000,
    perCycle: Number(values['per-cycle']),
    qos: values.qos === '1' ? 1 : 0,
    place,
    start: Date.now() - Number(values.cycles) * Number(values['per-cycle']) * 60_000,
    onReading: () => {
      sent++
      if (sent % 100 === 0) console.log(`${sent} readings published`)
    }
  })
  console.log(`${sent} readings published by ${tokens.length} kits`)
}
