import type { FastifyInstance } from 'fastify'
import { type MessageIngest, REJECTION_REASONS, type StoredReadings } from '@esp/domain'
import { Counter, Gauge } from '@esp/http'
import type { MqttStats } from './broker/device-messages.js'

const MESSAGE_OUTCOMES = ['rejected', 'unknownDevice', 'failed'] as const satisfies ReadonlyArray<keyof MqttStats>

/**
 * The ingest service's series on the server's registry. The broker keeps plain counters
 * (MqttStats); they are read at scrape time, so the MQTT hot path never touches prom-client.
 * Returns the callback that counts each committed write, HTTP and MQTT alike.
 */
export function ingestMetrics (app: FastifyInstance, stats: MqttStats, backlog: () => MessageIngest | undefined): (stored: StoredReadings) => void {
  // Servers built without the shared plugins (protocol tests) have no registry.
  if (!app.hasDecorator('metrics')) return () => {}
  const metrics = app.metrics
  const registers = [metrics.registry]
  new Gauge({ name: 'esp_mqtt_connections', help: 'MQTT clients connected to the embedded broker of this process', registers, collect () { this.set(stats.connections) } })
  new Gauge({ name: 'esp_mqtt_backlog', help: 'MQTT device messages received and awaiting their commit (unacknowledged)', registers, collect () { this.set(backlog()?.pending ?? 0) } })
  // Counters rebuilt from the running totals at each scrape (reset, then one inc): the totals only grow.
  const total = (name: string, help: string, read: () => number): void => {
    new Counter({ name, help, registers, collect () { this.reset(); this.inc(read()) } })
  }
  total('esp_mqtt_messages_total', 'Device messages received over MQTT (embedded or external broker)', () => stats.messages)
  total('esp_mqtt_readings_stored_total', 'Readings newly stored from MQTT messages', () => stats.readings)
  total('esp_mqtt_readings_duplicates_total', 'Readings from MQTT messages already stored for that device, sensor and time', () => stats.duplicates)
  new Counter({
    name: 'esp_mqtt_messages_not_stored_total',
    help: 'MQTT device messages that stored nothing, by reason (rejected: unreadable payload; unknownDevice: no active device has the token; failed: database error, left unacknowledged)',
    labelNames: ['reason'],
    registers,
    collect () {
      this.reset()
      for (const reason of MESSAGE_OUTCOMES) this.inc({ reason }, stats[reason])
    }
  })
  // Issue 35: what devices sent that was not stored is never silent. Per reason, not per device:
  // the device's own count is in its ingest status, for its owner.
  new Counter({
    name: 'esp_mqtt_readings_messages_rejected_total',
    help: 'MQTT readings messages of known devices refused whole, nothing stored, by reason (unreadable: not the format of its topic; ' +
      'invalid: a malformed item; too_old: a time before the oldest accepted; in_future: a time too far ahead of the clock; too_many_values)',
    labelNames: ['reason'],
    registers,
    collect () {
      this.reset()
      for (const reason of REJECTION_REASONS) this.inc({ reason }, stats.rejectedBy[reason])
    }
  })
  new Counter({
    name: 'esp_mqtt_values_skipped_total',
    help: 'Values of MQTT readings messages left out while the rest was stored, by reason (unknown_sensor: no sensor has the id or key)',
    labelNames: ['reason'],
    registers,
    collect () {
      this.reset()
      this.inc({ reason: 'unknown_sensor' }, stats.skippedValues)
    }
  })
  return (stored) => { metrics.readingsStored.inc(stored.inserted.length) }
}
