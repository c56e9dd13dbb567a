import type { ReadingRow } from '@esp/db'
import { formatTimestamp, type StoredReadings } from '@esp/domain'
import { forwardTopic, liveTopic } from './topics.js'

export type Publish = (topic: string, payload: string) => void

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

  constructor (private readonly publish: Publish, private readonly options: { publishPrivate: boolean }) {}

  readonly onStored = ({ device, inserted }: StoredReadings): void => {
    if (device.isPrivate) this.privateOwners.set(device.id, device.ownerId)
    else this.privateOwners.delete(device.id)
    const payload = livePayload(device.id, inserted)
    if (!device.isPrivate || this.options.publishPrivate) this.publish(liveTopic(device.id), payload)
    if (device.forwardingToken !== null) this.publish(forwardTopic(device.forwardingToken, device.id), payload)
  }

  /** The owner of a device whose readings are private, as of its latest readings. */
  privateOwner (deviceId: number): number | undefined {
    return this.privateOwners.get(deviceId)
  }
}
