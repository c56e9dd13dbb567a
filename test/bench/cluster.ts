import { freePort } from '@esp/db'
import { startProcess, type Started } from '@esp/test-helpers/process'
import { authBalancer, brokerAuthSecret, startRabbitCluster } from '@esp/test-helpers/rabbitmq'
import { benchKits, publishAll, run, type Run, storedOf, valuesOf } from './mqtt.js'
import type { BenchPlatform } from './setup.js'
import { progress, round } from './stats.js'

export interface ClusterFigures {
  kits: number
  messagesPerKit: number
  /** QoS 1 on the platform's embedded broker, PUBACK after the commit */
  embedded: Run
  /** QoS 1 through the three-node RabbitMQ cluster into two ingest instances, PUBACK once the quorum queue holds it, timed until stored */
  cluster: Run
  /** the same, timed to the last PUBACK only: what devices wait for */
  clusterAcked: Run
  ratio: number
}

/**
 * Issue 24's figure: kits publishing the firmware's raw payloads at QoS 1 through a three-node
 * RabbitMQ cluster into two ingest instances (clustered mode), against the platform's embedded
 * broker in the same run, same kits and payloads. Everything runs on this one machine, so the
 * cluster's three nodes and the two instances share its cores with the database: the ratio is
 * what being clustered costs on one box, not what three boxes would hold.
 */
export async function benchCluster (p: BenchPlatform, quick: boolean): Promise<ClusterFigures> {
  const kitCount = quick ? 2 : 50
  const messages = quick ? 10 : 400
  const start = Date.UTC(2025, 6, 1)
  const kitsFor = async (): Promise<{ ids: number[], tokens: string[] }> => await benchKits(p, kitCount, 12582912)
  const stored = async (ids: number[]): Promise<number> => await storedOf(p, ids)
  const total = kitCount * messages

  const embeddedKits = await kitsFor()
  const values = valuesOf(embeddedKits.tokens, messages)
  progress(`cluster: ${kitCount} kits x ${messages} raw messages at QoS 1 on the embedded broker (${values} values)`)
  const embeddedSeconds = await publishAll(p.mqttUrl, embeddedKits.tokens, messages, 1, start, async () => {})
  if (await stored(embeddedKits.ids) !== values) throw new Error('the embedded broker acknowledged readings it had not stored')

  const stops: Array<() => unknown> = []
  const scope = { teardown: (fn: () => unknown) => { stops.push(fn) } }
  try {
    const ports = [await freePort(), await freePort()]
    const authPorts = [await freePort(), await freePort()]
    const secret = brokerAuthSecret()
    const authUrl = await authBalancer(scope, () => authPorts.map((port) => `http://127.0.0.1:${port}`), secret)
    progress('cluster: starting three RabbitMQ nodes and two ingest instances')
    const cluster = await startRabbitCluster(scope, { authUrl })
    const amqpUrls = cluster.nodes.map((n) => n.amqpUrl)
    const instances: Started[] = ports.map((port, i) => startProcess(scope, 'services/ingest/src/main.ts', {
      PORT: String(port),
      DATABASE_URL: p.database.url,
      BROKER_AMQP_URLS: [...amqpUrls.slice(i), ...amqpUrls.slice(0, i)].join(','),
      BROKER_AUTH_PORT: String(authPorts[i] ?? 0),
      BROKER_AUTH_SECRET: secret
    }))
    for (const instance of instances) await instance.waitFor(/MQTT\s+broker cluster/, 60_000)
    const clusterKits = await kitsFor()
    progress(`cluster: ${kitCount} kits x ${messages} raw messages at QoS 1 through the cluster`)
    // The clock runs from the go to the last PUBACK, then on until every reading is stored.
    let storingMs = 0
    const clusterSeconds = await publishAll(cluster.nodes.map((n) => n.mqttUrl), clusterKits.tokens, messages, 1, start, async () => {
      const acked = performance.now()
      while (await stored(clusterKits.ids) < values) await new Promise((resolve) => setTimeout(resolve, 20))
      storingMs = performance.now() - acked
    })
    const ackedSeconds = clusterSeconds - storingMs / 1000
    const storedCluster = await stored(clusterKits.ids)
    if (storedCluster !== values) throw new Error(`the cluster: ${storedCluster} of ${values} values stored`)
    const embedded = run(total, values, embeddedSeconds)
    const clustered = run(total, values, clusterSeconds)
    return {
      kits: kitCount,
      messagesPerKit: messages,
      embedded,
      cluster: clustered,
      clusterAcked: run(total, values, ackedSeconds),
      ratio: round(clustered.valuesPerSecond / embedded.valuesPerSecond, 3)
    }
  } finally {
    for (const stop of stops.reverse()) await stop()
  }
}
