import t from 'tap'
import type { ReadingRow } from '@esp/db'
import type { IngestDevice } from '@esp/domain'
import { EVERYONE, LiveFeed, SubscriberIndex } from '../../src/broker/live-feed.js'

const client = (): { closed: boolean } => ({ closed: false })
const device = (fields: Partial<IngestDevice> = {}): IngestDevice => ({ id: 7, kitId: 26, ownerId: 1, isPrivate: false, forwardingToken: null, ...fields })
const rows: ReadingRow[] = [{ deviceId: 7, sensorId: 55, recordedAt: new Date('2026-03-02T10:21:00Z'), value: 1, rawValue: 1 }]

t.test('the index holds each client\'s live and forwarding filters until they unsubscribe or disconnect', async (t) => {
  const index = new SubscriberIndex()
  const a = client()
  const b = client()
  t.notOk(index.hears(7), 'nobody at first')
  index.subscribed(a, ['devices/7/readings'])
  index.subscribed(b, ['devices/7/readings', 'devices/8/readings'])
  index.subscribed(a, ['devices/7/readings'])
  t.ok(index.hears(7) && index.hears(8))
  t.notOk(index.hears(9))
  index.unsubscribed(a, ['devices/7/readings'])
  t.ok(index.hears(7), 'b still listens to 7, though a subscribed to it twice and left')
  index.disconnected(b)
  t.notOk(index.hears(7) || index.hears(8), 'gone with b')

  index.subscribed(a, ['devices/+/readings'])
  t.ok(index.hears(12345), 'a wildcard hears every device')
  index.unsubscribed(a, ['devices/#'])
  t.ok(index.hears(12345), 'unsubscribing a filter not held changes nothing')
  index.disconnected(a)
  t.notOk(index.hears(12345))

  index.subscribed(a, ['/forward/tok1/device/+/readings', 'device/sck/abc/readings'])
  t.ok(index.forwards('tok1'))
  t.notOk(index.forwards('tok2'))
  t.notOk(index.hears(7), 'a filter the policy refuses counts nowhere')
  index.disconnected(a)
  t.notOk(index.forwards('tok1'))

  index.subscribed({ closed: true }, ['devices/+/readings'])
  t.notOk(index.hears(7), 'a client already closed holds nothing')
})

t.test('the feed builds and publishes a payload only for a device someone may hear', async (t) => {
  const index = new SubscriberIndex()
  const published: string[] = []
  const feed = new LiveFeed((topic) => { published.push(topic) }, { publishPrivate: true, audience: index })
  feed.onStored({ device: device(), inserted: rows })
  t.same(published, [], 'nobody listens')
  const listener = client()
  index.subscribed(listener, ['devices/7/readings'])
  feed.onStored({ device: device(), inserted: rows })
  feed.onStored({ device: device({ id: 8 }), inserted: rows })
  t.same(published, ['devices/7/readings'])
  index.subscribed(listener, ['/forward/tok/device/+/readings'])
  feed.onStored({ device: device({ id: 8, forwardingToken: 'tok' }), inserted: rows })
  t.same(published, ['devices/7/readings', '/forward/tok/device/8/readings'], 'forwarded without a live listener')
  feed.onStored({ device: device({ id: 7, isPrivate: true }), inserted: rows })
  t.equal(feed.privateOwner(7), 1, 'a private device is remembered whoever listens')

  const external: string[] = []
  const everywhere = new LiveFeed((topic) => { external.push(topic) }, { publishPrivate: false, audience: EVERYONE })
  everywhere.onStored({ device: device(), inserted: rows })
  everywhere.onStored({ device: device({ isPrivate: true }), inserted: rows })
  t.same(external, ['devices/7/readings'], 'an external broker gets every public device, no private one')
})
