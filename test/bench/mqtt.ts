import { spawn } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { Aedes } from 'aedes'
import type { ReadingRow } from '@esp/db'
import { kitReading } from '../../scripts/kit-simulator.js'
import { parseRawPayload } from '../../services/ingest/src/broker/raw-payload.js'
import { copyCeiling } from './ingest.js'
import { copyRows, makeDevices, type BenchPlatform } from './setup.js'
import { progress, round } from './stats.js'

export interface Run { messages: number, values: number, seconds: number, messagesPerSecond: number, valuesPerSecond: number }

export interface MqttFigures {
  kits: number
  messagesPerKit: number
  qos1: Run
  qos0: Run
  bare: { qos1: Run, qos0: Run }
  /** QoS 1 on a bare Aedes that only parses each payload and COPYs its rows, PUBACK after the commit */
  bareStoring: Run
  copy: { rows: number, rowsPerSecond: number }
  qos1RatioToCopy: number
  qos1RatioToBare: number
  qos0RatioToCopy: number
  qos0RatioToBare: number
}

/**
 * Starts the kit simulator, lets it connect, then starts the clock; `done` is awaited after its
 * last message was sent (QoS 0) or acknowledged (QoS 1), for what the platform must finish after.
 */
export async function publishAll (url: string | string[], tokens: string[], messages: number, qos: 0 | 1, start: number, done: () => Promise<void>): Promise<number> {
  const args = JSON.stringify({ url, tokens, messages, qos, start })
  const child = spawn(process.execPath, [...process.execArgv, path.join(import.meta.dirname, 'kits.ts'), args], { stdio: ['pipe', 'pipe', 'inherit'] })
  let out = ''
  let t0 = 0
  const exited = new Promise<number | null>((resolve) => { child.on('exit', resolve) })
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (t0 === 0 && out.includes('ready\n')) { t0 = performance.now(); child.stdin.write('go\n'); resolve() }
    })
    void exited.then((code) => { reject(new Error(`the kit simulator failed (${String(code)})`)) })
  })
  const code = await exited
  if (code !== 0) throw new Error(`the kit simulator failed (${String(code)})`)
  await done()
  return (performance.now() - t0) / 1000
}

/**
 * A bare Aedes that stores: each payload parsed as the platform parses it, its rows batched across
 * messages (up to 500, or 3 ms) and committed by the write path's binary COPY, the PUBACK after the
 * commit. No validation, device or sensor lookup, tiers or latest values, and the devices are known
 * beforehand: an upper bound for any broker that acknowledges after storing, on this machine.
 */
async function bareStoringBroker (p: BenchPlatform, deviceOf: Map<string, number>): Promise<ListeningBroker> {
  const broker = await Aedes.createBroker()
  let batch: { rows: ReadingRow[], done: (error?: Error | null) => void }[] = []
  let timer: NodeJS.Timeout | undefined
  const flush = (): void => {
    clearTimeout(timer)
    timer = undefined
    const taken = batch
    batch = []
    const rows = taken.flatMap((message) => message.rows)
    copyRows(p.database, rows)
      .then(() => { for (const message of taken) message.done(null) }, (err: Error) => { for (const message of taken) message.done(err) })
  }
  broker.authorizePublish = (client, packet, done) => {
    const deviceId = deviceOf.get(client?.id ?? '') ?? 0
    const raw = parseRawPayload(packet.payload as Buffer)
    const recordedAt = new Date(raw.recordedAt ?? 0)
    batch.push({ rows: raw.sensors.map((s) => ({ deviceId, sensorId: Number(s.id), recordedAt, value: Number(s.value), rawValue: Number(s.value) })), done })
    if (batch.length >= 500) flush()
    else timer ??= setTimeout(flush, 3)
  }
  return await listenBroker(broker)
}

interface ListeningBroker { url: string, close: () => Promise<void> }

/** A broker of the bench's own on a free port, and how to close it. */
async function listenBroker (broker: Aedes): Promise<ListeningBroker> {
  const server = net.createServer(broker.handle)
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  const address = server.address()
  return {
    url: `mqtt://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`,
    close: async () => {
      await new Promise<void>((resolve) => { broker.close(() => { resolve() }) })
      await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
    }
  }
}

/** Kits of the bench's own with tokens of six hex digits from `tokenBase` + their ids. */
export async function benchKits (p: BenchPlatform, count: number, tokenBase: number): Promise<{ ids: number[], tokens: string[] }> {
  const ids = await makeDevices(p.database, p.userId, count)
  const rows = await p.database.sql<{ device_token: string }[]>`
    update devices set device_token = to_hex(${tokenBase} + id) where id = any(${ids}::int[]) returning device_token`
  return { ids, tokens: rows.map((r) => r.device_token) }
}

/** Only these kits' readings: a key range, not a count of the whole table polled while the clock runs. */
export async function storedOf (p: BenchPlatform, ids: number[]): Promise<number> {
  return Number((await p.database.sql`select count(*)::bigint as n from readings where device_id = any(${ids}::int[])`)[0]?.n)
}

export const valuesOf = (tokens: string[], messages: number): number =>
  tokens.reduce((sum, token, k) => sum + Array.from({ length: messages }, (_, n) => kitReading(token, k, n, 0).sensors.length).reduce((a, b) => a + b, 0), 0)

export const run = (messages: number, values: number, seconds: number): Run => ({
  messages, values, seconds: round(seconds), messagesPerSecond: Math.round(messages / seconds), valuesPerSecond: Math.round(values / seconds)
})

async function until (check: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10))
}

/**
 * Case 2: kits publishing the firmware's raw payloads to the embedded broker, at QoS 1 (timed to
 * the last PUBACK, which comes after the commit) and at QoS 0 (timed until the last reading is
 * stored); against a plain COPY of as many rows, and against a bare Aedes with nothing behind it.
 */
export async function benchMqtt (p: BenchPlatform, quick: boolean): Promise<MqttFigures> {
  const kitCount = quick ? 2 : 50
  const messages = quick ? 10 : 400
  const start = Date.UTC(2025, 0, 1)
  const kitsFor = async (): Promise<{ ids: number[], tokens: string[] }> => await benchKits(p, kitCount, 11534336)
  const stored = async (ids: number[]): Promise<number> => await storedOf(p, ids)
  const total = kitCount * messages

  const { ids: qos1Ids, tokens: qos1Tokens } = await kitsFor()
  const values = valuesOf(qos1Tokens, messages)
  progress(`mqtt: ${kitCount} kits x ${messages} raw messages at QoS 1 (${values} values)`)
  const qos1Seconds = await publishAll(p.mqttUrl, qos1Tokens, messages, 1, start, async () => {})
  const stored1 = await stored(qos1Ids)
  if (stored1 !== values) throw new Error(`QoS 1: ${stored1} of ${values} values stored after the last PUBACK`)

  const { ids: qos0Ids, tokens: qos0Tokens } = await kitsFor()
  progress(`mqtt: ${kitCount} kits x ${messages} raw messages at QoS 0`)
  const qos0Seconds = await publishAll(p.mqttUrl, qos0Tokens, messages, 0, start, async () => { await until(async () => await stored(qos0Ids) >= values) })

  progress('mqtt: the bare broker (no storage) at QoS 1 and QoS 0')
  const bare = await Aedes.createBroker()
  let received = 0
  bare.on('publish', (_packet, client) => { if (client !== null && client !== undefined) received++ })
  const bareListening = await listenBroker(bare)
  let bareQos1: number, bareQos0: number
  try {
    bareQos1 = await publishAll(bareListening.url, qos1Tokens, messages, 1, start, async () => {})
    received = 0
    bareQos0 = await publishAll(bareListening.url, qos0Tokens, messages, 0, start, async () => { await until(() => received >= total) })
  } finally {
    await bareListening.close()
  }

  progress('mqtt: a bare broker that only parses and COPYs, at QoS 1')
  const { ids: storingIds, tokens: storingTokens } = await kitsFor()
  const storing = await bareStoringBroker(p, new Map(storingTokens.map((token, i) => [token, storingIds[i] ?? 0])))
  let bareStoring: number
  try {
    bareStoring = await publishAll(storing.url, storingTokens, messages, 1, start, async () => {})
  } finally {
    await storing.close()
  }
  const storedBare = await stored(storingIds)
  if (storedBare !== values) throw new Error(`the storing bare broker: ${storedBare} of ${values} values stored after the last PUBACK`)

  const copyRate = await copyCeiling(p, kitCount, Math.round(values / kitCount), start)
  const figures = {
    kits: kitCount,
    messagesPerKit: messages,
    qos1: run(total, values, qos1Seconds),
    qos0: run(total, values, qos0Seconds),
    bare: { qos1: run(total, values, bareQos1), qos0: run(total, values, bareQos0) },
    bareStoring: run(total, values, bareStoring),
    copy: { rows: values, rowsPerSecond: Math.round(copyRate) }
  }
  return {
    ...figures,
    qos1RatioToCopy: round(figures.qos1.valuesPerSecond / copyRate, 3),
    qos1RatioToBare: round(figures.qos1.messagesPerSecond / figures.bare.qos1.messagesPerSecond, 3),
    qos0RatioToCopy: round(figures.qos0.valuesPerSecond / copyRate, 3),
    qos0RatioToBare: round(figures.qos0.messagesPerSecond / figures.bare.qos0.messagesPerSecond, 3)
  }
}
