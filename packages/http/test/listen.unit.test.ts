import t from 'tap'
import { listenWithFallback } from '@esp/http'

function busyOn (busyPort: number): { bind: (port: number) => Promise<number>, calls: number[] } {
  const calls: number[] = []
  return {
    calls,
    bind: async (port) => {
      calls.push(port)
      if (port === busyPort) throw Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' })
      return port === 0 ? 40_000 : port
    }
  }
}

t.test('a busy default port falls back to a free one', async (t) => {
  const server = busyOn(3000)
  t.same(await listenWithFallback(server.bind, { port: 3000, explicit: false, name: 'HTTP', key: 'PORT' }), { port: 40_000, fellBack: true })
  t.same(server.calls, [3000, 0])
})

t.test('a busy explicit port is an error naming the key', async (t) => {
  const server = busyOn(1883)
  await t.rejects(listenWithFallback(server.bind, { port: 1883, explicit: true, name: 'MQTT', key: 'MQTT_PORT' }),
    /MQTT port 1883 is already in use \(set by MQTT_PORT\)/)
  t.same(server.calls, [1883])
})

t.test('a free port is taken as it is; other errors pass through', async (t) => {
  t.same(await listenWithFallback(busyOn(1).bind, { port: 3000, explicit: false, name: 'HTTP', key: 'PORT' }), { port: 3000, fellBack: false })
  await t.rejects(listenWithFallback(async () => { throw new Error('EACCES') }, { port: 80, explicit: false, name: 'HTTP', key: 'PORT' }), /EACCES/)
})
