import type { Handle } from '../client.js'

/** The latest message of a device refused whole: when, why, and its problems (bounded by the domain). */
export interface IngestRejection {
  /** ISO time */
  at: string
  reason: string
  problems: Record<string, string[]>
}

/** What one process noted of one device since its last merge (domain IngestStatusLog). */
export interface IngestStatusDelta {
  deviceId: number
  /** the latest problem noted */
  at: Date
  /** sensor ids or keys skipped, the latest first */
  unknownSensors: Array<number | string>
  skippedValues: number
  rejectedMessages: number
  lastRejection: IngestRejection | null
}

/** A device's ingest status as its representation reads it (queries/devices.ts). */
export interface IngestStatusRecord {
  since: Date
  lastProblemAt: Date
  unknownSensors: Array<number | string>
  skippedValues: number
  rejectedMessages: number
  lastRejection: IngestRejection | null
}

/** How many unknown sensors a device's status keeps: the latest ones. */
export const MAX_UNKNOWN_SENSORS = 20

/**
 * Merges the deltas of many devices in one statement (one round trip per flush of a process, not
 * one per message): counts add up, the unknown sensors are the delta's first, then the stored ones
 * not among them, at most MAX_UNKNOWN_SENSORS, and the later rejection wins. Rows go in device
 * order, so two processes merging the same devices lock them in the same order. A device deleted
 * meanwhile is left out rather than failing the others on its foreign key.
 */
export async function mergeIngestStatus (h: Handle, deltas: IngestStatusDelta[]): Promise<void> {
  if (deltas.length === 0) return
  const rows = [...deltas].sort((a, b) => a.deviceId - b.deviceId).map((d) => ({
    device_id: d.deviceId,
    at: d.at.toISOString(),
    unknown: d.unknownSensors.slice(0, MAX_UNKNOWN_SENSORS),
    skipped: d.skippedValues,
    rejected: d.rejectedMessages,
    rejection: d.lastRejection
  }))
  // JSON as text cast to jsonb: drizzle owns the shared client's serializers (devices/device-messages.ts).
  await h.sql`
    insert into device_ingest_status as s (device_id, since, last_problem_at, unknown_sensors, skipped_values, rejected_messages, last_rejection)
    select d.device_id, d.at, d.at, d.unknown, d.skipped, d.rejected, d.rejection
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as d(device_id int, at timestamptz, unknown jsonb, skipped bigint, rejected bigint, rejection jsonb)
    where exists (select 1 from devices where id = d.device_id)
    order by d.device_id
    on conflict (device_id) do update set
      last_problem_at = greatest(s.last_problem_at, excluded.last_problem_at),
      unknown_sensors = (
        select coalesce(jsonb_agg(u.ref order by u.n), '[]'::jsonb) from (
          select ref, min(n) as n from (
            select ref, n from jsonb_array_elements(excluded.unknown_sensors) with ordinality as fresh(ref, n)
            union all
            select ref, n + ${MAX_UNKNOWN_SENSORS}::int from jsonb_array_elements(s.unknown_sensors) with ordinality as kept(ref, n)
          ) refs group by ref order by min(n) limit ${MAX_UNKNOWN_SENSORS}::int) u),
      skipped_values = s.skipped_values + excluded.skipped_values,
      rejected_messages = s.rejected_messages + excluded.rejected_messages,
      last_rejection = case
        when excluded.last_rejection is null then s.last_rejection
        when s.last_rejection is null or (excluded.last_rejection->>'at')::timestamptz >= (s.last_rejection->>'at')::timestamptz then excluded.last_rejection
        else s.last_rejection end`
}
