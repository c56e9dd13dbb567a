import type { ReadingRow } from '@esp/db'
import { formatTimestamp, type StoredReadings } from '@esp/domain'
import { forwardTopic, liveTopic, subscriptionScope } from './topics.js'

export type Publish = (topic: string, payload: string) => void

/** Whether anyone could receive a device's live or forwarded readings. */
export interface Audience {
  hears: (deviceId: number) => boolean
  forwards: (forwardingToken: string) => boolean
}

/** An external broker cannot say who subscribes: everything is published. */
export const EVERYONE: Audience = { hears: () => true, forwards: () => true }

/**
 * The live and forwarding filters that clients of the embedded broker hold, kept from the broker's
 * own subscribe, unsubscribe and disconnect events. A payload of stored readings costs more to build
 * than the readings cost to check (a profile of HTTP ingest: 12 % of the process), and most writes
 * have nobody listening. A filter counts from the broker's `subscribe` event, emitted in the same
 * turn as the SUBACK, so nothing published after a client learns it is subscribed is skipped; a
 * filter still counted after it went only costs a payload.
 */
export class SubscriberIndex implements Audience {
  private readonly filtersOf = new Map<object, Set<string>>()
  private everyDevice = 0
  private readonly devices = new Map<number, number>()
  private readonly tokens = new Map<string, number>()

  subscribed (client: { closed: boolean }, filters: readonly string[]): void {
    if (client.closed) return
    let held = this.filtersOf.get(client)
    if (held === undefined) this.filtersOf.set(client, held = new Set())
    for (const filter of filters) {
      if (held.has(filter)) continue
      held.add(filter)
      this.count(filter, 1)
    }
  }

  unsubscribed (client: object, filters: readonly string[]): void {
    const held = this.filtersOf.get(client)
    if (held === undefined) return
    for (const filter of filters) if (held.delete(filter)) this.count(filter, -1)
  }

  disconnected (client: object): void {
    const held = this.filtersOf.get(client)
    if (held === undefined) return
    this.filtersOf.delete(client)
    for (const filter of held) this.count(filter, -1)
  }

  hears (deviceId: number): boolean {
    return this.everyDevice > 0 || this.devices.has(deviceId)
  }

  forwards (forwardingToken: string): boolean {
    return this.tokens.has(forwardingToken)
  }

  /** Only the filters the access policy grants reach here (subscriptionScope); others count nowhere. */
  private count (filter: string, by: 1 | -1): void {
    const scope = subscriptionScope(filter)
    if (scope.kind === 'live' && scope.deviceId === null) this.everyDevice += by
    else if (scope.kind === 'live') adjust(this.devices, scope.deviceId, by)
    else if (scope.kind === 'forward') adjust(this.tokens, scope.forwardingToken, by)
  }
}

function adjust<K> (counts: Map<K, number>, key: K, by: number): void {
  const n = (counts.get(key) ?? 0) + by
  if (n > 0) counts.set(key, n)
  else counts.delete(key)
}

/**
 * The JSON of stored readings on the live and forwarding topics: the contract's `data` shape,
 * grouped by time, oldest first, with the calibrated value and the number as posted.
 */
export function livePayload (deviceId: number, rows: readonly ReadingRow[]): string {
  const byTime = new Map<number, ReadingRow[]>()
  for (const row of rows) {
    const at = row.recordedAt.getTime()
    const group = byTime.get(at)
    if (group === undefined) byTime.set(at, [row])
    else group.push(row)
  }
  const data = [...byTime.entries()].sort((a, b) => a[0] - b[0]).map(([at, group]) => ({
    recorded_at: formatTimestamp(new Date(at)),
    sensors: group.map((r) => ({ id: r.sensorId, value: r.value, raw_value: r.rawValue }))
  }))
  return JSON.stringify({ device_id: deviceId, data })
}

/**
 * After each commit, newly stored readings go out to live subscribers and to the owner's
 * forwarding topic (issue #6 §4–5). On the embedded broker a private device's readings are
 * published too, and `mayReceive` keeps them to its owner and admins; an external broker cannot
 * tell subscribers apart, so there they are not published at all.
 */
export class LiveFeed {
  /** private devices seen lately, with their owners: the broker forwards their readings to these only */
  private readonly privateOwners = new Map<number, number>()

  constructor (private readonly publish: Publish, private readonly options: { publishPrivate: boolean, audience: Audience }) {}

  readonly onStored = ({ device, inserted }: StoredReadings): void => {
    if (device.isPrivate) this.privateOwners.set(device.id, device.ownerId)
    else this.privateOwners.delete(device.id)
    const live = (!device.isPrivate || this.options.publishPrivate) && this.options.audience.hears(device.id)
    const forward = device.forwardingToken !== null && this.options.audience.forwards(device.forwardingToken)
    if (!live && !forward) return
    const payload = livePayload(device.id, inserted)
    if (live) this.publish(liveTopic(device.id), payload)
    if (forward && device.forwardingToken !== null) this.publish(forwardTopic(device.forwardingToken, device.id), payload)
  }

  /** The owner of a device whose readings are private, as of its latest readings. */
  privateOwner (deviceId: number): number | undefined {
    return this.privateOwners.get(deviceId)
  }
}
