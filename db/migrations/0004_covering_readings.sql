-- The native engine's readings key carries the value (INCLUDE), so every read of one sensor's
-- history in key order (raw rollups, streamed exports, CSV archives) is an index-only scan: the
-- heap is laid out by arrival time, all sensors of a device interleaved, so reading one sensor
-- through the heap touches every page of the range once per sensor. The key itself is unchanged
-- (ON CONFLICT and first-write-wins still name device, sensor and time), and the value is written
-- once, so it costs a wider index entry and no update path.
--
-- Index-only scans skip the heap only on pages the visibility map marks all-visible, which
-- vacuum sets; readings are insert-only, so partitions get vacuumed after 1 % of new rows instead
-- of PostgreSQL's 20 % (a vacuum of an insert-only table only visits the pages not yet marked).
--
-- TimescaleDB keeps its key: compressed chunks (older than 30 days) are read per (device, sensor)
-- segment anyway, and its hypertable constraints cannot be changed once compression is on.
DO $covering$
BEGIN
  IF (SELECT value FROM esp_settings WHERE key = 'ts_engine') = 'native' THEN
    ALTER TABLE readings DROP CONSTRAINT readings_pkey,
      ADD CONSTRAINT readings_pkey PRIMARY KEY (device_id, sensor_id, recorded_at) INCLUDE (value);
  END IF;
END
$covering$;
--> statement-breakpoint

CREATE OR REPLACE FUNCTION esp_ensure_reading_partitions(from_at timestamptz, to_at timestamptz) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  month timestamptz := date_trunc('month', from_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  created integer := 0;
  name text;
BEGIN
  IF (SELECT value FROM esp_settings WHERE key = 'ts_engine') <> 'native' THEN
    RETURN 0;
  END IF;
  WHILE month <= to_at LOOP
    name := 'readings_' || to_char(month AT TIME ZONE 'UTC', 'YYYY_MM');
    IF to_regclass(name) IS NULL THEN
      PERFORM pg_advisory_xact_lock(7250331003);
      IF to_regclass(name) IS NULL THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF readings FOR VALUES FROM (%L) TO (%L) WITH (autovacuum_vacuum_insert_scale_factor = 0.01)',
          name, month, (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
        created := created + 1;
      END IF;
    END IF;
    month := (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
  END LOOP;
  RETURN created;
END
$$;
--> statement-breakpoint

DO $partitions$
DECLARE
  part regclass;
BEGIN
  FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'readings'::regclass
    AND (SELECT value FROM esp_settings WHERE key = 'ts_engine') = 'native'
  LOOP
    EXECUTE format('ALTER TABLE %s SET (autovacuum_vacuum_insert_scale_factor = 0.01)', part);
  END LOOP;
END
$partitions$;
